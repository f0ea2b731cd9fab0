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

COMPAT_BODY = """\
// Warp-level differences between CUDA and ROCm.
// CUDA warps have 32 lanes; CDNA wavefronts (gfx9: MI200, MI300, MI355) have 64, RDNA 32.
// WARP32_* keep 32-lane logical warps on every platform (for kernels written for 32 lanes);
// WARP_* take the same arguments as the CUDA *_sync intrinsic and use the hardware warp.
// On CUDA every macro expands to exactly the original intrinsic call.
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
"""
NEW_HEADER = "// rocm_compat.h: CUDA/ROCm differences for this repo's kernels, in one place.\n" \
             "#ifndef ROCM_COMPAT_H\n#define ROCM_COMPAT_H\n\n{body}\n#endif  // ROCM_COMPAT_H\n"

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


_SHUFFLE_OR_WARP = re.compile(r"__shfl|\bWARP_SIZE\b|warpSize")
_ROCM_GUARD = re.compile(r"^\s*#\s*(?:ifdef|if\s+defined)\W+(?:USE_ROCM|__HIP_PLATFORM_AMD__|__HIPCC__)", re.MULTILINE)


def _is_compat(text: str) -> bool:
    """A repo header that already separates CUDA and ROCm warp code (a compat header of the repo's own)."""
    return bool(_ROCM_GUARD.search(text) and _SHUFFLE_OR_WARP.search(text))


def find_compat(ws: Workspace, file: str | None = None) -> tuple[str, bool] | None:
    """The repo's compat header and whether it already has our WARP_* macros.

    Ours first; else a ROCm-guarded warp header the file already includes; else one named *compat*."""
    headers = [rel for rel in source_files(ws.root) if rel.endswith(HEADER_EXTS)]
    for rel in headers:
        if f"#define {MARKER}" in (ws.read(rel) or ""):
            return rel, True
    included = set()
    if file:
        from agent.units import include_graph
        included = include_graph(ws.root).get(file, set())
    for rel in sorted(included):
        if rel.endswith(HEADER_EXTS) and _is_compat(ws.read(rel) or ""):
            return rel, False
    for rel in headers:
        if "compat" in Path(rel).name.lower() and _is_compat(ws.read(rel) or ""):
            return rel, False
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


def compat_body(ws: Workspace) -> str:
    """The macro block; it defines WARP_SIZE unless the repo already uses its own WARP_SIZE."""
    repo_has_own = any(_OTHER_WARP_SIZE.search(ws.read(rel) or "") for rel in source_files(ws.root))
    return COMPAT_BODY.format(warp_size="" if repo_has_own else WARP_SIZE_BLOCK)


def _append(text: str, body: str) -> str:
    """The block added to an existing header: before its include guard's #endif, else at the end."""
    lines = text.rstrip("\n").splitlines(keepends=True)
    block = "\n" + body
    if lines and re.match(r"\s*#\s*endif", lines[-1]) and re.search(r"^\s*#\s*ifndef\s+\w+_H\w*\s*$",
                                                                   text, re.MULTILINE):
        return "".join(lines[:-1]).rstrip("\n") + "\n" + block + "\n" + lines[-1] + "\n"
    return text.rstrip("\n") + "\n" + block


def plan_compat(ws: Workspace, file: str) -> tuple[str, tuple[str | None, str] | None]:
    """(compat header path, its edit or None): reuse ours, extend the repo's own, or create one."""
    found = find_compat(ws, file)
    if found and found[1]:
        return found[0], None
    if found:
        old = ws.read(found[0]) or ""
        return found[0], (old, _append(old, compat_body(ws)))
    rel = compat_location(ws, file)
    return rel, (None, NEW_HEADER.format(body=compat_body(ws)))


def already_included(ws: Workspace, file: str, compat: str) -> bool:
    """True when `file` already #includes the compat header (however the path is spelled)."""
    from agent.units import include_graph
    return compat in include_graph(ws.root).get(file, set())


def include_spelling(compat: str, file: str) -> str:
    """`#include "..."` path of the compat header as seen from `file` (relative to its directory)."""
    return os.path.relpath(compat, os.path.dirname(file) or ".").replace(os.sep, "/")
