"""bf16/fp16 intrinsics ROCm 6.4 lacks (`__float2bfloat16_rn`, `__floats2bfloat162_rn`, the directed bf16
roundings, `__double2half`) and bf16 warp shuffles get ROCm definitions with CUDA's results."""

from __future__ import annotations

import math
import struct
from fractions import Fraction

from agent.proposers.rules import Workspace, propose_for
from tests.agent.rules.helpers import failure, image_toolchains, propose, validate

HEADER = """#pragma once
#include <cuda_runtime.h>
#ifdef USE_ROCM
#include <hip/hip_bf16.h>
#include <hip/hip_fp16.h>
typedef __hip_bfloat16 __nv_bfloat16;
typedef __hip_bfloat162 __nv_bfloat162;
#else
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

// Scales a bf16 row and sums it across the warp in bf16.
__device__ inline __nv_bfloat16 scaled_sum(const __nv_bfloat16* row, float s, __nv_bfloat162* pair) {
  __nv_bfloat16 v = __float2bfloat16_rn(__bfloat162float(row[threadIdx.x]) * s);
  for (int o = 16; o > 0; o /= 2) v = __hadd(v, __shfl_xor_sync(0xffffffff, v, o));
  pair[0] = __floats2bfloat162_rn(__bfloat162float(v), s);
  pair[1] = __shfl_down_sync(0xffffffff, __float2bfloat162_rn(s), 1);
  unsigned rank = threadIdx.x;  // a 32-bit shuffle in the same file stays HIP's own (vLLM's topk histogram)
  for (int o = 1; o < 32; o *= 2) rank += __shfl_up_sync(0xffffffff, rank, o);
  pair[2] = __floats2bfloat162_rn(float(rank), s);
  return __hmax(v, __float2bfloat16_rz(s));
}

__device__ inline __half2 clamp2(__half2 x, __half2 lo, __half2 hi) { return __hmin2(__hmax2(x, lo), hi); }
"""
UNIT = """#include "row.cuh"

__global__ void k(const __nv_bfloat16* rows, __nv_bfloat16* out, __nv_bfloat162* pairs, float s) {
  out[blockIdx.x] = scaled_sum(rows + blockIdx.x * 32, s, pairs + 3 * blockIdx.x);
}
"""


def _fail(name: str, message: str):
    fail = failure("bf16_type", "csrc/row.cuh", name, message)
    fail.facts["unit"] = "csrc/unit.cu"
    return fail


def test_bf16_conversions_and_shuffles_compile_on_both(git_repo, rocm_image, nvcc):
    root = git_repo({"csrc/row.cuh": HEADER, "csrc/unit.cu": UNIT})
    tools = image_toolchains(root, rocm_image, "gfx942")
    warp = failure(
        "warp_intrinsic", "csrc/row.cuh", "__shfl_xor_sync", "use of undeclared identifier '__shfl_xor_sync'"
    )
    warp.facts["unit"] = "csrc/unit.cu"
    first = validate(root, tools, propose(root, warp), warp)  # the warp rule brings the bf16 shuffles along
    assert first.applied, first.reason
    compat = (root / "csrc/rocm_compat.h").read_text()
    assert (
        "std::is_same<T, __hip_bfloat16>::value" in compat
        and "inline T __shfl_xor(T v, int lane_mask" in compat
    )
    conv = _fail("__float2bfloat16_rn", "use of undeclared identifier '__float2bfloat16_rn'")
    outcome = validate(root, tools, propose(root, conv), conv)
    assert outcome.kept, outcome.reason
    assert all(c.ok for c in outcome.checks), [c.detail for c in outcome.checks]  # hipcc, nvcc, CUDA -E
    compat = (root / "csrc/rocm_compat.h").read_text()
    for name in (
        "__float2bfloat16_rn",
        "__floats2bfloat162_rn",
        "__float2bfloat162_rn",
        "__float2bfloat16_rz",
    ):
        assert f" {name}(float" in compat, name  # all the file uses, at once
    assert "__float2bfloat16_ru" not in compat and "__double2half" not in compat  # only what it uses
    assert " __hmax2(__half2 a" in compat and " __hmin2(__half2 a" in compat
    assert compat.count("inline T __shfl_xor(") == 2  # the shuffles once (bf16 and bf162)
    assert not propose_for(conv, Workspace(root=root)).proposals  # a second run adds nothing


def _value(bits: int) -> Fraction | None:
    """A bf16 pattern's exact value (infinities as +-2**200), None for NaN."""
    f = struct.unpack("<f", struct.pack("<I", bits << 16))[0]
    if math.isnan(f):
        return None
    return Fraction(f) if math.isfinite(f) else Fraction(2**200) * (1 if f > 0 else -1)


def _directed(f: float) -> tuple[int, int, int]:
    """(rz, rd, ru) bf16 bits of f from values alone: the bf16 neighbours at or below and at or above f."""
    if math.isnan(f):
        return (0x7FFF,) * 3
    top = struct.unpack("<I", struct.pack("<f", f))[0] >> 16
    x = Fraction(f) if math.isfinite(f) else _value(top)
    near = [(v, b) for b in ((top + d) & 0xFFFF for d in range(-2, 3)) if (v := _value(b)) is not None]
    rd = max((v, b) for v, b in near if v <= x)[1]
    ru = min((v, b) for v, b in near if v >= x)[1]
    return (rd if f >= 0 else ru), rd, ru


VALUES = [1.0, 1.7, -1.7, 3.14159, -2.71828, 0.0, -0.0, 1e-40, -1e-40, 3.4e38, -3.4e38, 65504.3, -7e-3, 255.9]
VALUES += [float("inf"), float("-inf"), float("nan"), 1.00390625, -1.00390625, 1.0 + 2**-9, -(1.0 + 2**-9)]
MAIN = """#include <hip/hip_runtime.h>
#include <cstdio>
#include "csrc/rocm_compat.h"
int main() {{
  const float v[] = {{{values}}};
  for (float f : v) {{
    printf("%04x %04x %04x\\n", __bfloat16_as_ushort(__float2bfloat16_rz(f)),
           __bfloat16_as_ushort(__float2bfloat16_rd(f)), __bfloat16_as_ushort(__float2bfloat16_ru(f)));
  }}
}}
"""


def test_directed_bf16_roundings_match_ieee(git_repo, rocm_image):
    """The ROCm definitions, run on the host in the image: rz/rd/ru are the IEEE neighbours of each value."""
    from sandboxes.docker import DockerSandbox
    from tools.patching import apply_diff

    used = "__float2bfloat16_rz(f), __float2bfloat16_rd(f), __float2bfloat16_ru(f)"
    root = git_repo({"csrc/row.cuh": f"__device__ inline void use(float f) {{ (void)({used}); }}\n"})
    fail = failure(
        "bf16_type",
        "csrc/row.cuh",
        "__float2bfloat16_rd",
        "use of undeclared identifier '__float2bfloat16_rd'",
    )
    apply_diff(root, propose(root, fail).diff)
    literals = ", ".join(
        "NAN"
        if math.isnan(v)
        else "INFINITY"
        if v == math.inf
        else "-INFINITY"
        if v == -math.inf
        else f"{v!r}f"
        for v in VALUES
    )
    (root / "main.cpp").write_text(MAIN.format(values=literals))
    with DockerSandbox(rocm_image, str(root)) as box:
        out = box.run(
            "hipcc -x hip -DUSE_ROCM --offload-arch=gfx942 main.cpp -o main && ./main", cwd=str(root)
        )
    assert out.ok, out.stderr[-2000:]
    got = [tuple(int(w, 16) for w in line.split()) for line in out.stdout.split("\n") if line.strip()]
    want = [_directed(struct.unpack("<f", struct.pack("<f", v))[0]) for v in VALUES]
    assert got == want
