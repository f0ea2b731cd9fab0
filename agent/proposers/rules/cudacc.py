"""`__CUDACC__` tests read "compiled by the CUDA compiler"; hipcc is that compiler on ROCm but defines
`__HIPCC__`, not `__CUDACC__`, so it takes the branch written for a plain host compiler.

That branch typically re-declares host versions of what the CUDA compiler provides (helper_math's host
`min`/`max`/`fminf`, which clang's HIP headers already define: `redefinition of 'max'`), or drops
`__host__ __device__` from a qualifier macro. When hipcc's error lies in such a branch, each `__CUDACC__`
test in that file also accepts `__HIPCC__`, as torch's build-time hipify does (it rewrites `__CUDACC__`
to `__HIPCC__`). nvcc never defines `__HIPCC__`, so the CUDA preprocessor output is unchanged.

The same test often guards the `__host__ __device__` of a helper (`#ifdef __CUDACC__ __host__ __device__
#endif`, or a qualifier macro defined so): hipcc then sees a host function, and a kernel calling it fails with
"call to __host__ function from __global__ function". The tests of the file holding that qualifier widen too.
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

_HOST_ONLY = re.compile(
    r"^(?P<file>[^\s:][^:\n]*):(?P<line>\d+):\d+: note: candidate function not viable: call to __host__ "
    r"function from __(?:global|device)__ function",
    re.MULTILINE,
)
_WORD = re.compile(r"\b[A-Za-z_]\w*\b")


def _cuda_only_qualifier(lines: list[str], start: int, names: set[str]) -> bool:
    """True when a line from `start` on (at most 3 lines) is compiled by CUDA only, inside a `__CUDACC__` test,
    and says `__device__` or defines one of `names` as a qualifier that does."""
    platforms = line_platforms(lines)
    for i in range(max(start, 0), min(start + 3, len(lines))):
        if platforms[i] != "cuda" or not any(_CUDACC.search(d) for d in enclosing(lines, i)):
            continue
        text = lines[i]
        m = re.match(r"\s*#\s*define\s+(\w+)\b(.*)", text)
        if ("__device__" in text and not m) or (m and m.group(1) in names and "__device__" in m.group(2)):
            return True
    return False


def qualifier_file(ws: Workspace, excerpt: str) -> str | None:
    """The repo file whose `__CUDACC__` test keeps `__host__ __device__` from the helper a kernel calls, from
    clang's "candidate function not viable: call to __host__ function" note."""
    from agent.patch.units import include_graph

    m = _HOST_ONLY.search(excerpt or "")
    if not m:
        return None
    rel, line = m.group("file").removeprefix("./"), int(m.group("line"))
    text = ws.read(rel)
    if text is None:
        return None
    lines = text.splitlines(keepends=True)
    if _cuda_only_qualifier(lines, line - 4, set()):  # the qualifier right above the declaration
        return rel
    words = set(_WORD.findall("".join(lines[max(line - 3, 0) : line])))
    near = [rel, *sorted(include_graph(ws.root).get(rel, ()))]  # a qualifier macro, here or in an include
    for cand in near:
        cand_lines = (ws.read(cand) or "").splitlines(keepends=True)
        for i, ln in enumerate(cand_lines):
            d = re.match(r"\s*#\s*define\s+(\w+)", ln)
            if d and d.group(1) in words and _cuda_only_qualifier(cand_lines, i, words):
                return cand
    return None


class HostOnlyHelperFixer:
    """A kernel calls a helper whose `__host__ __device__` only `__CUDACC__` compilers see -> that file's
    `__CUDACC__` tests accept `__HIPCC__`."""

    family = "cudacc_qualifier"
    kinds: tuple[str, ...] = ("compile_error", "compiler_dialect")

    def propose(self, failure: Failure, ws: Workspace) -> Proposal | None:
        rel = qualifier_file(ws, failure.excerpt or "")
        text = ws.read(rel) if rel else None
        if rel is None or text is None:
            return None
        new = "".join(widen(ln) for ln in text.splitlines(keepends=True))
        return make_proposal(
            failure,
            self.family,
            {rel: (text, new)},
            (
                f"{failure.file}:{failure.line} calls `{failure.symbol}`, whose `__host__ __device__` in {rel} is "
                f"behind a `__CUDACC__` test; hipcc defines `__HIPCC__`, not `__CUDACC__`, so it saw a host-only "
                f"function ({failure.message}). Each `__CUDACC__` test in {rel} now also accepts `__HIPCC__` (what "
                f"torch's hipify does at build time); nvcc never defines `__HIPCC__`, so nothing changes on CUDA."
            ),
            ws=ws,
        )


register(HostOnlyHelperFixer())
