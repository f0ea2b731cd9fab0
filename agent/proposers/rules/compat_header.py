"""The one per-repo compat header for warp-level differences: found if it exists, created once if not,
and extended with only the macros a fix needs (so every patch stays as small as it can be).

On CUDA every macro expands to exactly the original intrinsic call, so the CUDA preprocessor output of
the kernels is unchanged.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from agent.patch.units import HEADER_EXTS, include_graph, source_files
from agent.proposers.rules.base import Decline, Workspace
from agent.proposers.rules.headers import target_file
from tools.records import Failure

COMPAT_NAME = "rocm_compat.h"
# name -> (ROCm definition, CUDA definition). WARP32_* keep 32-lane logical warps on ROCm;
# WARP_* take the CUDA intrinsic's own arguments and use the hardware warp (64 lanes on CDNA).
MACROS: dict[str, tuple[str, str]] = {
    "WARP_FULL_MASK": ("0xffffffffffffffffULL", "0xffffffff"),
    "WARP_SHFL(mask, ...)": ("__shfl(__VA_ARGS__)", "__shfl_sync(mask, __VA_ARGS__)"),
    "WARP_SHFL_XOR(mask, ...)": ("__shfl_xor(__VA_ARGS__)", "__shfl_xor_sync(mask, __VA_ARGS__)"),
    "WARP_SHFL_UP(mask, ...)": ("__shfl_up(__VA_ARGS__)", "__shfl_up_sync(mask, __VA_ARGS__)"),
    "WARP_SHFL_DOWN(mask, ...)": ("__shfl_down(__VA_ARGS__)", "__shfl_down_sync(mask, __VA_ARGS__)"),
    "WARP32_SHFL(mask, var, src_lane)": ("__shfl(var, src_lane, 32)", "__shfl_sync(mask, var, src_lane)"),
    "WARP32_SHFL_XOR(mask, var, lane_mask)": (
        "__shfl_xor(var, lane_mask, 32)",
        "__shfl_xor_sync(mask, var, lane_mask)",
    ),
    "WARP32_SHFL_UP(mask, var, delta)": ("__shfl_up(var, delta, 32)", "__shfl_up_sync(mask, var, delta)"),
    "WARP32_SHFL_DOWN(mask, var, delta)": (
        "__shfl_down(var, delta, 32)",
        "__shfl_down_sync(mask, var, delta)",
    ),
    "WARP_BALLOT(mask, pred)": ("__ballot(pred)", "__ballot_sync(mask, pred)"),
    "WARP32_BALLOT(mask, pred)": (
        "((unsigned)(__ballot(pred) >> (__lane_id() & 32)))",
        "__ballot_sync(mask, pred)",
    ),
    "WARP_ANY(mask, pred)": ("__any(pred)", "__any_sync(mask, pred)"),
    "WARP32_ANY(mask, pred)": ("(WARP32_BALLOT(mask, pred) != 0u)", "__any_sync(mask, pred)"),
    "WARP_ALL(mask, pred)": ("__all(pred)", "__all_sync(mask, pred)"),
    "WARP32_ALL(mask, pred)": (
        "(WARP32_BALLOT(mask, pred) == WARP32_BALLOT(mask, 1))",
        "__all_sync(mask, pred)",
    ),
    "WARP_ACTIVEMASK()": ("__ballot(1)", "__activemask()"),
    "WARP32_ACTIVEMASK()": ("WARP32_BALLOT(0, 1)", "__activemask()"),
    "WARP_SYNC(...)": ("rocm_compat_syncwarp()", "__syncwarp(__VA_ARGS__)"),
    "COMPAT_LDG(ptr)": ("(*(ptr))", "__ldg(ptr)"),
}
NEEDS = {
    "WARP32_ANY": ["WARP32_BALLOT"],
    "WARP32_ALL": ["WARP32_BALLOT"],
    "WARP32_ACTIVEMASK": ["WARP32_BALLOT"],
}
SYNCWARP_FN = """\
// Wavefronts run in lockstep; what __syncwarp adds is memory ordering among the lanes.
__device__ inline void rocm_compat_syncwarp() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront");
  __builtin_amdgcn_wave_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront");
}
"""
WARP_SIZE_BLOCK = """\
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
NEW_HEADER = (
    "// rocm_compat.h: CUDA/ROCm differences for this repo's kernels, in one place.\n"
    "#ifndef ROCM_COMPAT_H\n#define ROCM_COMPAT_H\n\n{body}\n#endif  // ROCM_COMPAT_H\n"
)
_ANY_OURS = re.compile(
    r"#\s*define\s+(?:WARP32?_(?:SHFL|BALLOT|ANY|ALL|ACTIVEMASK|SYNC|FULL_MASK)\w*|COMPAT_LDG)\b"
)
_SHUFFLE_OR_WARP = re.compile(r"__shfl|\bWARP_SIZE\b|warpSize")
_ROCM_GUARD = re.compile(
    r"^\s*#\s*(?:ifdef|if\s+defined)\W+(?:USE_ROCM|__HIP_PLATFORM_AMD__|__HIPCC__)", re.MULTILINE
)
_OTHER_WARP_SIZE = re.compile(
    r"^(?!\s*#\s*(?:define|ifndef|ifdef|undef)\s+WARP_SIZE\b).*\bWARP_SIZE\b", re.MULTILINE
)


def _name(signature: str) -> str:
    return signature.split("(", 1)[0]


def _defined(text: str) -> set[str]:
    return set(re.findall(r"^\s*#\s*define\s+(\w+)", text, re.MULTILINE))


def find_compat(ws: Workspace, file: str) -> str | None:
    """The compat header: one with our macros; else a ROCm-guarded warp header the file includes;
    else a ROCm-guarded warp header named *compat*."""
    headers = [rel for rel in source_files(ws.root) if rel.endswith(HEADER_EXTS)]
    for rel in headers:
        if Path(rel).name == COMPAT_NAME or _ANY_OURS.search(ws.read(rel) or ""):
            return rel
    is_compat = [
        rel for rel in headers if _ROCM_GUARD.search(t := ws.read(rel) or "") and _SHUFFLE_OR_WARP.search(t)
    ]
    included = include_graph(ws.root).get(file, set())
    return next((r for r in is_compat if r in included), None) or next(
        (r for r in is_compat if "compat" in Path(r).name.lower()), None
    )


def compat_text(ws: Workspace, file: str) -> str:
    """The text of the compat header `file` would use ('' when the repo has none yet)."""
    compat = find_compat(ws, file)
    return (ws.read(compat) or "") if compat else ""


def compat_view(ws: Workspace, failure: Failure) -> tuple[str, str, str] | None:
    """The file a compat-header rule patches, its text and its compat header's text ('' when the repo has
    none yet); None when the file cannot be read."""
    rel = target_file(failure)
    text = ws.read(rel)
    if text is None:
        return None
    return rel, text, compat_text(ws, rel)


def compat_location(ws: Workspace, file: str) -> str:
    """Where a new compat header goes: the kernel source root (from the profile), else the file's top dir."""
    unit = getattr(ws.profile, "unit", None)
    for pattern in unit.sources if unit else []:
        prefix = pattern.split("*", 1)[0].rstrip("/")
        if prefix and file.startswith(prefix + "/"):
            return f"{prefix}/{COMPAT_NAME}"
    parts = Path(file).parts
    return f"{parts[0]}/{COMPAT_NAME}" if len(parts) > 1 else COMPAT_NAME


def block(names: list[str], header_text: str, with_warp_size: bool) -> str:
    """The #ifdef USE_ROCM / #else block defining `names` (macro names), plus what they rely on."""
    sigs = [s for s in MACROS if _name(s) in names]
    out = [WARP_SIZE_BLOCK] if with_warp_size else []
    if not sigs:
        return "".join(out)
    rocm = [f"#define {s} {MACROS[s][0]}\n" for s in sigs]
    cuda = [f"#define {s} {MACROS[s][1]}\n" for s in sigs]
    head = [] if "hip/hip_runtime.h" in header_text else ["#include <hip/hip_runtime.h>\n"]
    fn = [SYNCWARP_FN] if "WARP_SYNC" in names and "rocm_compat_syncwarp" not in header_text else []
    out += [
        "// Warp intrinsics as macros: WARP_* take the CUDA intrinsic's arguments and use the hardware warp\n",
        "// (64 lanes on CDNA); WARP32_* keep 32-lane logical warps. On CUDA each is the original call.\n",
        "#ifdef USE_ROCM\n",
        *head,
        *fn,
        *rocm,
        "#else\n",
        *cuda,
        "#endif\n",
    ]
    return "".join(out)


def insert_block(text: str, body: str) -> str:
    """`body` before the header's include-guard #endif, else at the end."""
    lines = text.rstrip("\n").splitlines(keepends=True)
    guarded = re.search(r"^\s*#\s*ifndef\s+\w+_H\w*\s*$", text, re.MULTILINE)
    if lines and guarded and re.match(r"\s*#\s*endif", lines[-1]):
        return "".join(lines[:-1]).rstrip("\n") + "\n\n" + body + "\n" + lines[-1] + "\n"
    return text.rstrip("\n") + "\n\n" + body


def plan_compat(
    ws: Workspace, file: str, needed: set[str]
) -> tuple[str | None, tuple[str | None, str] | None]:
    """(compat header path, its edit or None) so that every macro in `needed` (and WARP_SIZE if asked) exists.
    The path is None when nothing is needed and the repo has no compat header (its own WARP_SIZE serves)."""
    for name in list(needed):
        needed.update(NEEDS.get(name, []))
    rel = find_compat(ws, file)
    old = ws.read(rel) if rel else None
    if rel is not None and old is None:  # the walk lists it, yet it is no file: a dangling symlink
        raise Decline(
            f"{rel}: the compat header is not a readable file (a dangling symlink?): fix or remove it"
        )
    defined = _defined(old or "")
    repo_warp_size = "WARP_SIZE" in defined or any(
        _OTHER_WARP_SIZE.search(ws.read(r) or "") for r in source_files(ws.root)
    )
    with_warp_size = "WARP_SIZE" in needed and not repo_warp_size
    missing = sorted(n for n in needed if n != "WARP_SIZE" and n not in defined)
    if not missing and not with_warp_size:
        return rel, None
    body = block(missing, old or "", with_warp_size)
    if rel is None or old is None:  # no compat header yet (a path without text declined above)
        return compat_location(ws, file), (None, NEW_HEADER.format(body=body))
    return rel, (old, insert_block(old, body))


def already_included(ws: Workspace, file: str, compat: str) -> bool:
    """True when `file` already #includes the compat header (however the path is spelled)."""
    return compat in include_graph(ws.root).get(file, set())


def includes_transitively(ws: Workspace, file: str, header: str) -> bool:
    """True when `file` #includes `header` directly or through the repo's other headers."""
    graph = include_graph(ws.root)
    seen: set[str] = set()
    todo = [file]
    while todo:
        for dep in graph.get(todo.pop(), set()) - seen:
            seen.add(dep)
            todo.append(dep)
    return header in seen


def include_spelling(compat: str, file: str) -> str:
    """`#include "..."` path of the compat header as seen from `file` (relative to its directory)."""
    return os.path.relpath(compat, os.path.dirname(file) or ".").replace(os.sep, "/")


def add_block(ws: Workspace, file: str, block_text: str | None) -> dict[str, tuple[str | None, str]]:
    """Edits that put `block_text` into the compat header (the repo's own, else a new one) and make `file`
    include it with its other includes; `block_text` None only adds the include."""
    from agent.proposers.rules.warp import add_include  # warp imports this module

    compat = find_compat(ws, file) or compat_location(ws, file)
    old = ws.read(compat)
    edits: dict[str, tuple[str | None, str]] = {}
    if block_text:
        edits[compat] = (
            old,
            insert_block(old, block_text) if old is not None else NEW_HEADER.format(body=block_text),
        )
    if not already_included(ws, file, compat):
        text = ws.read(file) or ""
        edits[file] = (text, add_include(text, include_spelling(compat, file)))
    return edits
