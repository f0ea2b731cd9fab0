"""The OCP fp8 shim, run on the host in the image: every code decodes to its OCP value and encodes back, and
values between two codes round to nearest even with CUDA's satfinite and NaN rules."""

from __future__ import annotations

import itertools
import math

from agent.proposers.rules.fp8_ocp import SHIM

FORMATS = {"e4m3": (3, 7, 0x7E), "e5m2": (2, 15, 0x7B)}
MAIN = """#include "compat.h"
#include <cstdio>
int main() {
  for (unsigned c = 0; c < 256; ++c) {
    __nv_fp8_e4m3 a; a.__x = c;
    __nv_fp8_e5m2 b; b.__x = c;
    printf("%u %a %a\\n", c, float(a), float(b));
  }
  const float probes[] = {PROBES};
  for (float f : probes) printf("%a %u %u\\n", f, __nv_fp8_e4m3(f).__x, __nv_fp8_e5m2(f).__x);
}
"""


def _decode(code: int, mant: int, bias: int) -> float:
    sign = -1.0 if code & 0x80 else 1.0
    mag, e, m = code & 0x7F, (code & 0x7F) >> mant, code & ((1 << mant) - 1)
    if (mant == 3 and mag == 0x7F) or (mant == 2 and e == 31 and m):
        return math.nan
    if mant == 2 and e == 31:
        return sign * math.inf
    return sign * (m + (1 << mant if e else 0)) * 2.0 ** ((e or 1) - bias - mant)


def _encode(f: float, mant: int, bias: int, top: int) -> int:
    """Nearest even code by value (satfinite: beyond the largest finite code, that code; NaN 0x7f)."""
    if math.isnan(f):
        return 0x7F
    sign = 0x80 if math.copysign(1.0, f) < 0 else 0
    codes = sorted((_decode(c, mant, bias), c) for c in range(top + 1))
    best = min(codes, key=lambda vc: (abs(vc[0] - abs(f)), vc[1] & 1))
    return sign | (top if abs(f) > codes[-1][0] else best[1])


def test_every_code_round_trips_and_midpoints_round_to_even(tmp_path, rocm_image):
    from sandboxes.docker import DockerSandbox

    e4 = [_decode(c, 3, 7) for c in range(0x7F)]
    probes = (
        [v for v in e4 if v] + [(a + b) / 2 for a, b in itertools.pairwise(e4)] + [500.0, -1e9, 1e-12, 3.0e-3]
    )
    probes += [-(a + b) / 2 for a, b in itertools.pairwise(e4[:21])] + [70000.0, 57344.0, 61440.0, 2.0**-17]
    (tmp_path / "compat.h").write_text("#define USE_ROCM 1\n" + SHIM)
    (tmp_path / "main.cpp").write_text(MAIN.replace("PROBES", ", ".join(f"{float.hex(p)}f" for p in probes)))
    with DockerSandbox(rocm_image, str(tmp_path)) as box:
        out = box.run("hipcc -x hip --offload-arch=gfx942 main.cpp -o main && ./main", cwd=str(tmp_path))
    assert out.ok, out.stderr[-2000:]
    lines = out.stdout.splitlines()
    for line in lines[:256]:
        c, a, b = line.split()
        for got, (mant, bias, _) in (
            (float.fromhex(a), FORMATS["e4m3"]),
            (float.fromhex(b), FORMATS["e5m2"]),
        ):
            want = _decode(int(c), mant, bias)
            assert (math.isnan(got) and math.isnan(want)) or got == want, (c, got, want)
    for line, p in zip(lines[256:], probes, strict=True):
        _, a, b = line.split()
        assert int(a) == _encode(p, *FORMATS["e4m3"]), (p, a)
        assert int(b) == _encode(p, *FORMATS["e5m2"]), (p, b)
