"""The one per-repo compat header for warp-level differences: found if it exists, created once if not."""
from __future__ import annotations

import os
import re
from pathlib import Path

from agent.rules.base import Workspace
from agent.units import HEADER_EXTS, source_files

COMPAT_NAME = "rocm_compat.h"
MARKER = "WARP32_SHFL_XOR"
"""A header defining this macro is a compat header this rule made (or one shaped like it)."""

COMPAT_HEADER = """\
// rocm_compat.h: warp-level differences between CUDA and ROCm, in one place.
// CUDA warps have 32 lanes; CDNA wavefronts (gfx9: MI200, MI300, MI355) have 64, RDNA 32.
// WARP32_* keep 32-lane logical warps on every platform (for kernels written for 32 lanes);
// WARP_* take the same arguments as the CUDA *_sync intrinsic and use the hardware warp.
// On CUDA every macro expands to exactly the original intrinsic call.
#ifndef ROCM_COMPAT_H
#define ROCM_COMPAT_H
{warp_size}
#ifdef USE_ROCM
#include <hip/hip_runtime.h>

// ROCm shuffles take no mask; their default width is the 64-lane wavefront, so 32-lane
// kernels pass width 32 explicitly. Ballots and lane masks are 64-bit.
#define WARP_FULL_MASK 0xffffffffffffffffULL
#define WARP_SHFL(mask, ...) __shfl(__VA_ARGS__)
#define WARP_SHFL_XOR(mask, ...) __shfl_xor(__VA_ARGS__)
#define WARP_SHFL_UP(mask, ...) __shfl_up(__VA_ARGS__)
#define WARP_SHFL_DOWN(mask, ...) __shfl_down(__VA_ARGS__)
#define WARP32_SHFL(mask, var, src_lane) __shfl(var, src_lane, 32)
#define WARP32_SHFL_XOR(mask, var, lane_mask) __shfl_xor(var, lane_mask, 32)
#define WARP32_SHFL_UP(mask, var, delta) __shfl_up(var, delta, 32)
#define WARP32_SHFL_DOWN(mask, var, delta) __shfl_down(var, delta, 32)
#define WARP_BALLOT(mask, pred) __ballot(pred)
#define WARP32_BALLOT(mask, pred) ((unsigned)(__ballot(pred) >> (__lane_id() & 32)))
#define WARP_ANY(mask, pred) __any(pred)
#define WARP32_ANY(mask, pred) (WARP32_BALLOT(mask, pred) != 0u)
#define WARP_ALL(mask, pred) __all(pred)
#define WARP32_ALL(mask, pred) (WARP32_BALLOT(mask, pred) == WARP32_BALLOT(mask, 1))
#define WARP_ACTIVEMASK() __ballot(1)
#define WARP32_ACTIVEMASK() WARP32_BALLOT(0, 1)
#define WARP_SYNC(...) rocm_compat_syncwarp()
#define COMPAT_LDG(ptr) (*(ptr))
// Wavefronts run in lockstep; what __syncwarp adds is memory ordering among the lanes.
__device__ inline void rocm_compat_syncwarp() {{
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront");
  __builtin_amdgcn_wave_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront");
}}
#else
#define WARP_FULL_MASK 0xffffffff
#define WARP_SHFL(mask, ...) __shfl_sync(mask, __VA_ARGS__)
#define WARP_SHFL_XOR(mask, ...) __shfl_xor_sync(mask, __VA_ARGS__)
#define WARP_SHFL_UP(mask, ...) __shfl_up_sync(mask, __VA_ARGS__)
#define WARP_SHFL_DOWN(mask, ...) __shfl_down_sync(mask, __VA_ARGS__)
// CUDA's default shuffle width is its 32-lane warp, so the 32-lane forms are the plain calls.
#define WARP32_SHFL(mask, var, src_lane) __shfl_sync(mask, var, src_lane)
#define WARP32_SHFL_XOR(mask, var, lane_mask) __shfl_xor_sync(mask, var, lane_mask)
#define WARP32_SHFL_UP(mask, var, delta) __shfl_up_sync(mask, var, delta)
#define WARP32_SHFL_DOWN(mask, var, delta) __shfl_down_sync(mask, var, delta)
#define WARP_BALLOT(mask, pred) __ballot_sync(mask, pred)
#define WARP32_BALLOT(mask, pred) __ballot_sync(mask, pred)
#define WARP_ANY(mask, pred) __any_sync(mask, pred)
#define WARP32_ANY(mask, pred) __any_sync(mask, pred)
#define WARP_ALL(mask, pred) __all_sync(mask, pred)
#define WARP32_ALL(mask, pred) __all_sync(mask, pred)
#define WARP_ACTIVEMASK() __activemask()
#define WARP32_ACTIVEMASK() __activemask()
#define WARP_SYNC(...) __syncwarp(__VA_ARGS__)
#define COMPAT_LDG(ptr) __ldg(ptr)
#endif

#endif  // ROCM_COMPAT_H
"""

WARP_SIZE_BLOCK = """
// The one source of truth for the hardware warp size (64 on CDNA, 32 on RDNA and CUDA).
// The host pass of a ROCm build assumes CDNA (the data-centre GPUs).
#ifndef WARP_SIZE
#if defined(USE_ROCM) && !(defined(__GFX10__) || defined(__GFX11__) || defined(__GFX12__))
#define WARP_SIZE 64
#else
#define WARP_SIZE 32
#endif
#endif
"""
_OTHER_WARP_SIZE = re.compile(r"^(?!\s*#\s*(?:define|ifndef|ifdef|undef)\s+WARP_SIZE\b).*\bWARP_SIZE\b", re.MULTILINE)


def find_compat(ws: Workspace) -> str | None:
    """The repo's compat header (one defining the WARP32_* macros), if there is one."""
    for rel in source_files(ws.root):
        if rel.endswith(HEADER_EXTS) and MARKER in (ws.read(rel) or "") and "#define " + MARKER in ws.read(rel):
            return rel
    return None


def compat_location(ws: Workspace, file: str) -> str:
    """Where a new compat header goes: the kernel source root (from the profile), else the file's top dir."""
    unit = getattr(ws.profile, "unit", None)
    for pattern in (unit.sources if unit else []):
        prefix = pattern.split("*", 1)[0].rstrip("/")
        if prefix and file.startswith(prefix + "/"):
            return f"{prefix}/{COMPAT_NAME}"
    parts = Path(file).parts
    return f"{parts[0]}/{COMPAT_NAME}" if len(parts) > 1 else COMPAT_NAME


def compat_text(ws: Workspace) -> str:
    """The header text; it defines WARP_SIZE unless the repo already uses its own WARP_SIZE."""
    repo_has_own = any(_OTHER_WARP_SIZE.search(ws.read(rel) or "") for rel in source_files(ws.root))
    return COMPAT_HEADER.format(warp_size="" if repo_has_own else WARP_SIZE_BLOCK)


def include_spelling(compat: str, file: str) -> str:
    """`#include "..."` path of the compat header as seen from `file` (relative to its directory)."""
    return os.path.relpath(compat, os.path.dirname(file) or ".").replace(os.sep, "/")
