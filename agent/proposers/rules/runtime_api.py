"""CUDA runtime API in a repo built without hipify: the cuda* names become their hip* names on ROCm.

One block in the repo's compat header (its own when it has one, else the one rocm_compat.h) maps every
runtime name the file uses, under `#ifdef USE_ROCM`; the file includes the header with its other includes.
On CUDA the block is empty, so the CUDA preprocessor output is unchanged.
"""

from __future__ import annotations

import re

from agent.proposers.rules.base import Decline, Workspace, make_proposal, register
from agent.proposers.rules.compat_header import add_block, compat_location, compat_text, find_compat
from agent.proposers.rules.cpp import line_platforms
from agent.proposers.rules.headers import target_file
from agent.proposers.rules.runtime_names import (
    KERNEL_CALLS,
    LAUNCH_EX,
    LAUNCH_EX_NAMES,
    RUNTIME,
    kernel_call_shim,
)
from tools.records import Failure, Proposal

_CUDA_NAME = re.compile(r"\bcuda[A-Z]\w*")
_SUGGESTED = re.compile(r"did you mean '(hip[A-Z]\w*)'")
_DEFINED = re.compile(r"^\s*#\s*define\s+(cuda\w+)\b", re.MULTILINE)
MARK = "// CUDA runtime API names on ROCm"


def used_names(text: str) -> list[str]:
    """Runtime names on lines both toolchains compile, in first-use order."""
    lines = text.splitlines()
    out: list[str] = []
    for line, where in zip(lines, line_platforms(lines), strict=True):
        if where != "both" or line.lstrip().startswith(("//", "*", "/*")):
            continue
        out += [n for n in _CUDA_NAME.findall(line.split("//", 1)[0]) if n not in out]
    return out


def _closure(ws: Workspace, rel: str) -> list[str]:
    """The repo files `rel` includes, directly or through other repo headers, in a stable order."""
    from agent.patch.units import include_graph

    graph = include_graph(ws.root)
    seen: list[str] = []
    todo = sorted(graph.get(rel, ()))
    while todo:
        cur = todo.pop(0)
        if cur not in seen and cur != rel:
            seen.append(cur)
            todo += sorted(graph.get(cur, ()))
    return seen


def runtime_block(names: list[str], header_text: str, mapping: dict[str, str]) -> str:
    """The `#ifdef USE_ROCM` block that defines `names` (and the launch-with-attributes shim when used)."""
    defines = [
        kernel_call_shim(n) if n in KERNEL_CALLS else f"#define {n} {mapping[n]}\n"
        for n in names
        if n in mapping or n in KERNEL_CALLS
    ]
    launch = [LAUNCH_EX] if any(n in LAUNCH_EX_NAMES for n in names) else []
    head = [] if "hip/hip_runtime.h" in header_text else ["#include <hip/hip_runtime.h>\n"]
    return "".join(
        [
            f"{MARK}: the HIP runtime has the same calls and types under hip* names.\n",
            "#ifdef USE_ROCM\n",
            *head,
            *defines,
            *launch,
            "#endif\n",
        ]
    )


def _has_launch_shim(text: str) -> bool:
    return "cudaLaunchConfig_t {" in text


class RuntimeApiFixer:
    """cuda* runtime names -> hip* through the compat header, for repos that do not hipify at build time."""

    family = "runtime_api"
    kinds: tuple[str, ...] = ("stream_api", "cuda_api", "compile_error")

    def propose(self, failure: Failure, ws: Workspace) -> Proposal | None:
        symbol = (failure.symbol or "").strip()
        if not _CUDA_NAME.fullmatch(symbol):
            return None
        if getattr(ws.profile, "hipify_at_build", False):
            raise Decline(
                f"{symbol}: this framework hipifies at build time, which renames runtime calls; the "
                f"error means hipify missed it (check the build's hipify step), not a missing mapping"
            )
        mapping = dict(RUNTIME)
        suggested = _SUGGESTED.search(failure.message or "")
        if symbol not in mapping and suggested:  # hip-clang names the HIP spelling itself
            mapping[symbol] = suggested.group(1)
        if symbol not in mapping and symbol not in LAUNCH_EX_NAMES:
            raise Decline(f"{symbol} has no known HIP runtime counterpart; needs a human or the LLM")
        rel = target_file(failure)
        text = ws.read(rel)
        if text is None:
            return None
        old = ws.read(find_compat(ws, rel) or compat_location(ws, rel)) or ""
        defined = set(_DEFINED.findall(old)) | ({*LAUNCH_EX_NAMES} if _has_launch_shim(old) else set())
        # names reach the file through its own headers' macros too (`CUCH(cudaMalloc(...))` with the check
        # macro comparing against cudaSuccess), and the failing name is used wherever the error points
        used = [
            *used_names(text),
            *(n for dep in _closure(ws, rel) for n in used_names(ws.read(dep) or "")),
            symbol,
        ]
        missing = [
            n
            for n in dict.fromkeys(used)
            if (n in mapping or n in LAUNCH_EX_NAMES or n in KERNEL_CALLS) and n not in defined
        ]
        edits = add_block(ws, rel, runtime_block(missing, old, mapping) if missing else None)
        compat = next((f for f in edits if f != rel), find_compat(ws, rel))
        if not edits:
            return None
        shim = (
            " cudaLaunchKernelEx launches plainly (its attributes are dropped)."
            if any(n in LAUNCH_EX_NAMES for n in missing)
            else ""
        )
        shim += (
            " cudaFuncSetAttribute/cudaFuncSetCacheConfig take the kernel itself, as CUDA's templates do, and "
            "pass it to HIP as const void*."
            if any(n in KERNEL_CALLS for n in missing)
            else ""
        )
        return make_proposal(
            failure,
            self.family,
            edits,
            (
                f"{rel}: the CUDA runtime names it uses ({', '.join(missing) or 'already mapped'}) map to their HIP "
                f"names in {compat} under `#ifdef USE_ROCM`; nothing changes on CUDA.{shim}"
            ),
            ws=ws,
        )


register(RuntimeApiFixer())


GRID_CONSTANT = """\
// __grid_constant__ marks a kernel parameter read-only in grid memory (CUDA 11.7+). HIP has no such
// qualifier; AMD kernel arguments are already read from constant memory, so it expands to nothing.
#if defined(USE_ROCM) && !defined(__grid_constant__)
#define __grid_constant__
#endif
"""


class GridConstantFixer:
    """`__grid_constant__` kernel parameters on ROCm: the qualifier expands to nothing there."""

    family = "grid_constant"
    kinds: tuple[str, ...] = ("compile_error",)

    def propose(self, failure: Failure, ws: Workspace) -> Proposal | None:
        rel = failure.file
        text = ws.read(rel) if rel else None
        if (
            not rel
            or text is None
            or not failure.line
            or "__grid_constant__" not in text.splitlines()[failure.line - 1]
        ):
            return None
        has = "define __grid_constant__" in compat_text(ws, rel)
        edits = add_block(ws, rel, None if has else GRID_CONSTANT)
        if not edits:
            return None
        return make_proposal(
            failure,
            self.family,
            edits,
            (
                f"{rel}: `__grid_constant__` has no HIP spelling; on ROCm it expands to nothing (kernel arguments "
                f"live in constant memory there); the CUDA code is unchanged."
            ),
            ws=ws,
        )


register(GridConstantFixer())
