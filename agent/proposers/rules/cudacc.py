"""`__CUDACC__` tests read "compiled by the CUDA compiler"; hipcc is that compiler on ROCm but defines
`__HIPCC__`, not `__CUDACC__`, so it takes the branch written for a plain host compiler.

That branch typically re-declares host versions of what the CUDA compiler provides (helper_math's host
`min`/`max`/`fminf`, which clang's HIP headers already define: `redefinition of 'max'`), or drops
`__host__ __device__` from a qualifier macro. When hipcc's error lies in such a branch, each `__CUDACC__`
test in that file also accepts `__HIPCC__`, as torch's build-time hipify does (it rewrites `__CUDACC__`
to `__HIPCC__`). nvcc never defines `__HIPCC__`, so the CUDA preprocessor output is unchanged.
"""

from __future__ import annotations

import re

from agent.proposers.rules.base import Workspace, make_proposal, register
from agent.proposers.rules.cpp import line_platforms
from agent.proposers.rules.headers import target_file
from tools.records import Failure, Proposal

_HIP = re.compile(r"\b(?:__HIPCC__|__HIP__|__HIP_PLATFORM_AMD__|USE_ROCM)\b")
_CUDACC = re.compile(r"\b__CUDACC__\b")
_IFDEF = re.compile(r"^(\s*#\s*)ifdef\s+__CUDACC__\b")
_IFNDEF = re.compile(r"^(\s*#\s*)ifndef\s+__CUDACC__\b")
_DEFINED = re.compile(r"\bdefined\s*(?:\(\s*__CUDACC__\s*\)|__CUDACC__\b)")
_OPEN = re.compile(r"^\s*#\s*if")
_ELSE = re.compile(r"^\s*#\s*(?:else|elif)\b")
_ENDIF = re.compile(r"^\s*#\s*endif\b")


def enclosing(lines: list[str], index: int) -> list[str]:
    """The opening directives (`#if...` lines) of the conditional groups line `index` is in."""
    stack: list[str] = []
    for line in lines[:index]:
        if _OPEN.match(line):
            stack.append(line)
        elif _ENDIF.match(line) and stack:
            stack.pop()
    return stack


def in_host_branch(lines: list[str], index: int) -> bool:
    """True when only ROCm compiles line `index`, inside a group that tests `__CUDACC__` (the host branch)."""
    if index >= len(lines) or line_platforms(lines)[index] != "rocm":
        return False
    return any(_CUDACC.search(d) and not _HIP.search(d) for d in enclosing(lines, index))


def widen(line: str) -> str:
    """One directive with each `__CUDACC__` test also accepting `__HIPCC__`."""
    if not line.lstrip().startswith("#") or not _CUDACC.search(line) or _HIP.search(line):
        return line
    if m := _IFDEF.match(line):
        return f"{m.group(1)}if defined(__CUDACC__) || defined(__HIPCC__)" + line[m.end() :]
    if m := _IFNDEF.match(line):
        return f"{m.group(1)}if !defined(__CUDACC__) && !defined(__HIPCC__)" + line[m.end() :]
    if re.match(r"^\s*#\s*(?:if|elif)\b", line):
        return _DEFINED.sub("(defined(__CUDACC__) || defined(__HIPCC__))", line)
    return line


class CudaccBranchFixer:
    """An error in a `#ifndef __CUDACC__` (host-compiler) branch hipcc takes -> the tests accept `__HIPCC__`."""

    family = "cudacc"
    kinds: tuple[str, ...] = ("compile_error", "compiler_dialect")

    def propose(self, failure: Failure, ws: Workspace) -> Proposal | None:
        if not failure.line:
            return None
        rel = target_file(failure)
        text = ws.read(rel)
        if text is None:
            return None
        lines = text.splitlines(keepends=True)
        if not in_host_branch(lines, failure.line - 1):
            return None
        new = "".join(widen(ln) for ln in lines)
        return make_proposal(
            failure,
            self.family,
            {rel: (text, new)},
            (
                f"{rel}:{failure.line} is in a branch for compilers other than the CUDA compiler (`__CUDACC__` "
                f"undefined); hipcc is ROCm's CUDA compiler but defines `__HIPCC__`, so it took that branch "
                f"({failure.message}). Each `__CUDACC__` test in the file now also accepts `__HIPCC__` (what "
                f"torch's hipify does at build time); nvcc never defines `__HIPCC__`, so nothing changes on CUDA."
            ),
            ws=ws,
        )


register(CudaccBranchFixer())
