"""The grep that `rocport scan` is timed against: one `grep -rE` pattern for what the scan reports.

`ROUND_ONE` is the pattern the scan benchmarks used from the start (warp intrinsics, CUDA headers and
runtime names, warp-size literals, inline asm, three Python cases). The scan has since learnt to
report more (CUDA-only libraries, driver and cuBLAS names, cooperative-groups and CUB algorithms
without a HIP counterpart, any inline asm, `warpSize` and warp-named 32s, more toolkit headers), so
`scan_pattern()` builds the pattern from the scan's own tables: the same constructs, raw, with no
preprocessor, comment or Python awareness. `evals/bench_real_scan.py` checks that it matches every
line the scan reports, so grep is never timed on less than the scan looks for.

grep's speed depends on the locale: in a UTF-8 one, `\\b` and `\\w` make the full pattern about 3x
slower than in the C locale, where every pattern here (all ASCII) matches the same lines. The fair
floor is the fastest grep: `c_locale=True`.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable
from pathlib import Path

from tools.cpp.headers import CUDA_HEADER_PREFIXES, CUDA_ONLY_LIBRARIES, CUDA_TO_HIP_HEADERS
from tools.scan.blockers import CG_ALGORITHMS
from tools.scan.catalog import CUDA_ONLY_MODULES, IDENTIFIER_FAMILIES

ROUND_ONE = (
    r'#[[:space:]]*include[[:space:]]*[<"](cuda[_a-zA-Z0-9]*\.h|cub/|cuda/std/)'
    r"|__shfl_(xor_|up_|down_)?sync|__syncwarp|__activemask|__ballot_sync|__(any|all)_sync"
    r"|__nv_(bfloat16|fp8)[a-z0-9_]*|CUB_WARP_THREADS|%[[:space:]]*32|&[[:space:]]*(31|0x1f)|>>[[:space:]]*5"
    r"|0xffffffff|\[32\]|asm[[:space:]]+volatile|cuda[A-Z][a-zA-Z_]*|cuGetProcAddress|cuTensorMap"
    r"|import[[:space:]]+(deep_gemm|flashinfer|flash_mla)|float8_e4m3fn|torch\.version\.cuda"
)


def _ere(python_regex: str) -> str:
    """A catalog regex in grep's extended syntax (the catalog's use only groups, classes, \\w, \\b)."""
    return python_regex.replace("(?:", "(")


def _escaped(text: str) -> str:
    return "".join(f"\\{c}" if c in ".+*?()[]{}|^$\\" else c for c in text)


def scan_pattern() -> str:
    """`grep -E` alternation of the raw constructs behind each kind of scan finding."""
    headers = sorted({*CUDA_TO_HIP_HEADERS, *CUDA_HEADER_PREFIXES, "cub/", *CUDA_ONLY_LIBRARIES})
    parts = [
        r'#[[:space:]]*include[[:space:]]*[<"](' + "|".join(map(_escaped, headers)) + ")",
        r"\b(" + "|".join(_ere(family) for family in IDENTIFIER_FAMILIES) + ")",
        # warp-size literals and names (tools/scan/warp_size.py, warp_masks.py)
        r"[%/][[:space:]]*32\b|&[[:space:]]*(31|0x1f)|>>[[:space:]]*5|0[xX][fF]{8}|\[[[:space:]]*32[[:space:]]*\]",
        r"\bwarpSize\b|([Ww]arp|WARP|[Ll]ane|LANE)\w*[[:space:]]*[={][[:space:]]*32\b",
        r"#[[:space:]]*define[[:space:]]+\w*([Ww]arp|WARP|[Ll]ane|LANE)\w*[[:space:]]+32\b",
        # inline asm of any spelling (tools/scan/ptx.py), CG and CUB algorithms (tools/scan/blockers.py)
        r"\b(__)?asm(__)?\b",
        r"\b(cg|cooperative_groups)::(" + CG_ALGORITHMS + r")\b",
        r"cub::((Base)?Traits[[:space:]]*<[^;{}]*>[[:space:]]*::[[:space:]]*Twiddle(In|Out)|(Unsigned|Float)Bits\b)",
        # Python (tools/scan/python_rules.py)
        r"(import|from)[[:space:]]+([[:alnum:]_.]+[[:space:]]*,[[:space:]]*)*("
        + "|".join(sorted(CUDA_ONLY_MODULES))
        + r")\b",
        r"import_module|__import__|float8_e4m3fn\b|version\.cuda|inline_asm_elementwise",
    ]
    return "|".join(parts)


def grep(root: Path, pattern: str = ROUND_ONE, *, c_locale: bool = False) -> bytes:
    """`grep -rEn` output, read through a pipe (grep short-circuits when its stdout is /dev/null)."""
    env = {**os.environ, "LC_ALL": "C"} if c_locale else None
    return subprocess.run(
        ["grep", "-rEn", "-e", pattern, str(root)], stdout=subprocess.PIPE, check=False, env=env
    ).stdout


def unmatched(root: Path, reported: Iterable[tuple[str, int]], pattern: str) -> list[tuple[str, int]]:
    """The (repo-relative file, line) pairs the scan reported that grep's pattern does not match."""
    matched = set()
    for line in grep(root, pattern, c_locale=True).splitlines():
        path, number, _ = [*line.split(b":", 2), b"", b""][:3]
        if number.isdigit():
            matched.add((os.path.relpath(path.decode(errors="replace"), root), int(number)))
    return [pair for pair in reported if pair not in matched]
