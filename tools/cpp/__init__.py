"""The one C/C++/CUDA source model shared by `rocport scan` and the fix rules.

Public API (import from `tools.cpp`; everything else is internal):

Per file
- `analyze(text, *, hipify=False, seed=None) -> Regions`: the preprocessor view of a file under the
  ROCm build and the CUDA build. `#if/#ifdef/#elif/#else` are evaluated with three-valued logic:
  USE_ROCM, __HIP_PLATFORM_AMD__, __HIPCC__, __HIP__ are defined on ROCm and undefined on CUDA;
  __CUDACC__, __NVCC__, __CUDA_ARCH__, CUDA_VERSION the other way round; other vendors' macros
  (USE_MUSA, __MACA__, ...: `OTHER_VENDOR_MACROS`) are undefined in both; anything else is unknown
  (so `#ifdef ENABLE_BF16` code counts as compiled). Macros the file `#define`s under such
  conditions are followed (`#if VLLM_FP8_CVT_X2` after a ROCm-dependent define), and a macro
  defined only in branches a build skips is undefined in that build.
  `Regions` answers: `.at(offset) -> (rocm, cuda)` liveness (True/False/None), `.rocm_compiles(offset)`,
  `.shared_code(offset)` (both builds may compile it: where findings belong),
  `.includes` (header, angled, offset, rocm, cuda), `.defines`, `.exports` (macros the file leaves
  defined, per build, for files that include it), `.condition_names`.
- `line_platforms(text, ...) -> list[str]`: per line 'both' | 'rocm' | 'cuda' | 'dead' (what the
  rules' old `branches()`/`platform_of()` answered, but evaluated, not pattern-matched).
- `rocm_only_file(rel, regions)`: `.hip` files, files under rocm/ (hip/, amd/) directories, and
  files that include hip/*.h, hipcub/... unguarded.
- `mask_comments_and_strings(text)`, `SourceText`: comments/literals blanked, offsets preserved.
- `evaluate(expr, config)`, `rocm_config(hipify)`, `cuda_config()`, `BuildConfig`, `Macro`.

Across a tree
- `IncludeGraph(files)`: `.resolve(includer, header)`, `.closure(rel)` (ROCm-live transitive
  includes), `.rocm_reachable(roots)`; `seed_for(graph, rel, exports)` gives the `seed` (macros
  from included headers) to pass to `analyze`.

Tables
- `ROCM_MACROS`, `CUDA_COMPILER_MACROS`, `OTHER_VENDOR_MACROS`.
- `CUDA_TO_HIP_HEADERS` (CUDA header -> HIP header or None), `hip_header_for`,
  `is_cuda_toolkit_header`, `is_rocm_header`, `ROCM_HEADER_PREFIXES`, `cuda_only_library(header)`
  (CUTLASS, CuTe, FlashInfer, DeepGEMM, cuDNN frontend, ...).
"""

from __future__ import annotations

from tools.cpp.build_configs import (
    CUDA_COMPILER_MACROS,
    OTHER_VENDOR_MACROS,
    ROCM_MACROS,
    BuildConfig,
    Macro,
    cuda_config,
    rocm_config,
)
from tools.cpp.conditions import evaluate
from tools.cpp.headers import (
    CUDA_TO_HIP_HEADERS,
    ROCM_HEADER_PREFIXES,
    cuda_only_library,
    hip_header_for,
    is_cuda_toolkit_header,
    is_rocm_header,
)
from tools.cpp.lines import analyze, line_platforms, platform, rocm_only_file
from tools.cpp.preprocessor import Include, Regions, Seed, walk
from tools.cpp.source import SourceText, mask_comments_and_strings
from tools.cpp.tree import IncludeGraph, merge_exports, seed_for

__all__ = [
    "CUDA_COMPILER_MACROS",
    "CUDA_TO_HIP_HEADERS",
    "OTHER_VENDOR_MACROS",
    "ROCM_HEADER_PREFIXES",
    "ROCM_MACROS",
    "BuildConfig",
    "Include",
    "IncludeGraph",
    "Macro",
    "Regions",
    "Seed",
    "SourceText",
    "analyze",
    "cuda_config",
    "cuda_only_library",
    "evaluate",
    "hip_header_for",
    "is_cuda_toolkit_header",
    "is_rocm_header",
    "line_platforms",
    "mask_comments_and_strings",
    "merge_exports",
    "platform",
    "rocm_config",
    "rocm_only_file",
    "seed_for",
    "walk",
]
