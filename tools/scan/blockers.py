"""Constructs that need a real port, not a rename: CUDA-only libraries, launch attributes and
programmatic dependent launch, cooperative-groups algorithms and CUB APIs hipCUB lacks.

- A file including CUTLASS, CuTe, FlashInfer, DeepGEMM, the cuDNN frontend, ... gets one finding per
  library ("exclude it from the ROCm build or port it"); the rest of that library's use is implied.
- `cudaLaunchKernelEx`, `cudaLaunchConfig_t`, `cudaLaunchAttribute*`, `cudaGridDependencySynchronize`,
  `cudaTriggerProgrammaticLaunchCompletion` (classified in catalog.py): hipify has no mapping.
- `cg::reduce`, `cg::inclusive_scan`, `cg::greater`/`less`/`plus`... (cooperative_groups/reduce.h,
  scan.h) and `cub::Traits<T>::TwiddleIn/Out`: no HIP or hipCUB counterpart.
"""

from __future__ import annotations

import re

from tools.cpp.headers import cuda_only_library
from tools.cpp.preprocessor import Regions, region_name
from tools.cpp.source import SourceText
from tools.records import Failure
from tools.regex_memo import compile_pattern
from tools.scan.catalog import WORD_PREFIXES, Construct
from tools.scan.findings import make_finding

_LIBRARY = Construct(
    "cuda_only_dep",
    "exclude_or_port",
    "CUDA-only library with no ROCm build: exclude the file from the ROCm build or port it",
)
_CG = Construct(
    "warp_intrinsic",
    "no_hip_equivalent",
    "cooperative-groups algorithm with no HIP equivalent (HIP has no cooperative_groups/reduce.h)",
)
_CUB = Construct("cub", "no_hip_equivalent", "CUB internal with no hipCUB equivalent")
CG_ALGORITHMS = (
    "reduce|inclusive_scan|exclusive_scan|reduce_update_async|reduce_store_async"
    "|greater|less|plus|bit_and|bit_or|bit_xor|invoke_one|invoke_one_broadcast"
)
"""Cooperative-groups algorithms and function objects with no HIP counterpart, as a regex alternation."""
_CG_NAMES = r"::(?P<cg>" + CG_ALGORITHMS + r")\b"
# One pattern per namespace spelling, each starting with a literal so the engine can skip to it.
_ALGORITHMS = (
    ("cg", compile_pattern(r"cg" + _CG_NAMES)),
    ("cooperative_groups", compile_pattern(r"cooperative_groups" + _CG_NAMES)),
    (
        "cub",
        compile_pattern(
            r"cub::(?P<cub>(?:Base)?Traits\s*<[^;{}]*?>\s*::\s*Twiddle(?:In|Out)|(?:Unsigned|Float)Bits\b)"
        ),
    ),
)
"""(head word, pattern): a match counts only at a word start, so a file without the head word has none."""


def library_findings(src: SourceText, regions: Regions) -> list[Failure]:
    """One finding per CUDA-only library a file includes where the ROCm build compiles it."""
    out, seen = [], set()
    for inc in regions.includes:
        library = cuda_only_library(inc.header)
        if library is None or library in seen or not regions.shared_code(inc.offset):
            continue
        seen.add(library)
        out.append(
            make_finding(
                src,
                inc.offset - 1,
                _LIBRARY,
                library,
                f"includes {library} (<{inc.header}>): {_LIBRARY.note}",
                region=region_name(inc.rocm, inc.cuda),
                facts={"header": inc.header},
            )
        )
    return out


def algorithm_findings(src: SourceText, regions: Regions) -> list[Failure]:
    """Cooperative-groups algorithms and CUB internals hipCUB lacks, once per file and name."""
    masked, found = src.masked, src.words(WORD_PREFIXES)
    patterns = [pattern for head, pattern in _ALGORITHMS if head in found]
    if not patterns:
        return []
    uses: dict[str, list[int]] = {}
    matches = [
        m
        for pattern in patterns
        for m in pattern.finditer(masked)
        if not (m.start() and (masked[m.start() - 1].isalnum() or masked[m.start() - 1] in "_:"))
    ]
    for m in sorted(matches, key=lambda m: m.start()):
        if not regions.shared_code(m.start()):
            continue
        groups = m.groupdict()
        name = f"cg::{groups['cg']}" if groups.get("cg") else "cub::" + re.sub(r"\s+", "", groups["cub"])
        name = re.sub(r"<.*>", "<T>", name)
        uses.setdefault(name, []).append(m.start())
    out = []
    for name, positions in uses.items():
        construct = _CG if name.startswith("cg::") else _CUB
        lines = sorted({src.line_col(p)[0] for p in positions})
        out.append(
            make_finding(
                src,
                positions[0],
                construct,
                name,
                f"{name}: {construct.note}",
                region=region_name(*regions.at(positions[0])),
                facts={"occurrences": len(positions), "lines": lines[:50], "certain": True},
            )
        )
    return out
