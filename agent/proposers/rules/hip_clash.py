"""A repo's own definition of a CUDA API function that HIP's headers already define with the same parameters.

Code written for older CUDA defines what its CUDA lacked: `atomicAdd(double*, double)` before sm_60, a
float `atomicMin` by CAS, host `min`/`max`. HIP defines them (`redefinition of 'atomicAdd'`, or `functions
that differ only in their return type` when the repo's returns void), with CUDA's meaning. When clang's
note puts the earlier definition in a HIP or clang header, the repo's definition goes under
`#ifndef USE_ROCM`, so ROCm callers get HIP's. Nothing changes on CUDA.
"""

from __future__ import annotations

import re

from agent.proposers.rules.base import Workspace, make_proposal, register
from agent.proposers.rules.clang_dialect import definition_end
from agent.proposers.rules.cpp import line_platforms
from agent.proposers.rules.cudacc import in_host_branch
from agent.proposers.rules.headers import target_file
from tools.records import Failure, Proposal

CLASH = re.compile(
    r"functions that differ only in their return type cannot be overloaded|redefinition of '\w+'"
)
HIP_NOTE = re.compile(
    r"(?:/hip/|__clang_hip|/rocm[^/\s]*/)[^\s:]*:\d+(?::\d+)?: note: previous (?:definition|declaration) is here"
)
NOTE = "// HIP defines this function itself, with the same parameters and CUDA's meaning"
_SCALAR = r"(?:unsigned\s+long\s+long(?:\s+int)?|long\s+long(?:\s+int)?|unsigned(?:\s+int)?|int|float|double)"
# a repo's own atomic on a type HIP's atomics cover: `void atomicMax(float* const address, const float value)`
ATOMIC = re.compile(
    rf"\batomic(?:Add|Sub|Exch|Min|Max|Inc|Dec|And|Or|Xor)\s*\(\s*(?:volatile\s+)?{_SCALAR}\s*\*\s*(?:const\s+)?\w*"
    rf"\s*,\s*(?:const\s+)?{_SCALAR}\s*\w*\s*\)"
)


def _start(lines: list[str], index: int) -> int:
    """The first line of the declaration whose name is on line `index` (its template/specifier lines)."""
    while index > 0:
        above = lines[index - 1].strip()
        if not above or above.endswith((";", "}", "{")) or above.startswith(("#", "//", "/*", "*")):
            break
        index -= 1
    return index


def _own_atomic(lines: list[str], i: int) -> bool:
    """Line i starts the definition of an atomic on a type HIP's atomics cover (the signature may span lines)."""
    head = "".join(lines[i : i + 3])
    return bool(re.match(r"[^;{}]*?\batomic\w+\s*\(", lines[i])) and bool(ATOMIC.search(head)) and "{" in head


class HipClashFixer:
    """A repo's `atomicAdd(double*, double)` & co clashing with HIP's own -> under `#ifndef USE_ROCM`."""

    family = "hip_clash"
    kinds: tuple[str, ...] = ("compile_error", "compiler_dialect")

    def propose(self, failure: Failure, ws: Workspace) -> Proposal | None:
        if not (
            CLASH.search(failure.message or "") and HIP_NOTE.search(failure.excerpt or "") and failure.line
        ):
            return None
        rel = target_file(failure)
        text = ws.read(rel)
        if text is None:
            return None
        lines = text.splitlines(keepends=True)
        at = failure.line - 1
        if at >= len(lines) or in_host_branch(lines, at) or line_platforms(lines)[at] not in ("both", "rocm"):
            return None
        if lines[at].lstrip().startswith(("//", "#")) or not re.search(r"\b\w+\s*\(", lines[at]):
            return None  # no declarator on the reported line (already guarded, or the log is stale)
        where = line_platforms(lines)
        # the failing definition, and the file's other own atomics on types HIP's cover (same message, one failure)
        own = [i for i in range(len(lines)) if _own_atomic(lines, i) and where[i] in ("both", "rocm")]
        clashing = {at, *own} if at in own else {at}
        spans = []
        for i in sorted(clashing):
            first = _start(lines, i)
            last = definition_end(lines, first)
            if last is None:  # a declaration: up to its `;`
                last = next((j for j in range(first, len(lines)) if ";" in lines[j]), first)
            spans.append((first, last))
        for first, last in reversed(spans):
            if not lines[last].endswith("\n"):
                lines[last] += "\n"
            lines[first : last + 1] = [f"{NOTE}\n#ifndef USE_ROCM\n", *lines[first : last + 1], "#endif\n"]
        new = "".join(lines)
        return make_proposal(
            failure,
            self.family,
            {rel: (text, new)},
            (
                f"{rel}:{failure.line}: {failure.message}; clang's note puts the earlier definition in HIP's own "
                f"headers, which define this CUDA API function with the same parameters. The repo's definition "
                f"goes under `#ifndef USE_ROCM` so ROCm callers use HIP's (a void-returning repo version is "
                f"called as a statement, so HIP's return value is ignored). Nothing changes on CUDA."
            ),
            ws=ws,
        )


register(HipClashFixer())
