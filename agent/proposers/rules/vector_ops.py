"""Vector-type operators a repo defines that HIP's vector types already define (NVIDIA's helper_math
style `float3 operator*(float3 a, float3 b)`).

CUDA's `float3` is a plain struct, so such headers supply the element-wise arithmetic. HIP's `float3` is
`HIP_vector_type<float, 3>`, whose non-template friends `operator*` and `operator/` take two vectors of
the same type: with the repo's own overload next to them every `a * b` is ambiguous to clang. HIP's are
element-wise too, so each such repo definition goes under `#ifndef USE_ROCM` (in every header of the
unit that has them: clang stops after 20 errors). The other operators HIP defines are templates (or
members), which a repo's non-template overload wins against, so those stay. Nothing changes on CUDA.
"""

from __future__ import annotations

import re

from agent.patch.units import include_graph
from agent.proposers.rules.base import Workspace, make_proposal, register
from agent.proposers.rules.cpp import line_platforms
from agent.proposers.rules.headers import target_file
from tools.records import Failure, Proposal

AMBIGUOUS = re.compile(r"use of overloaded operator '[*/]' is ambiguous .*HIP_vector_type<")
_VEC = r"(?:u?char|u?short|u?int|u?long|u?longlong|float|double)[1-4]"
DEFINITION = re.compile(
    rf"\boperator\s*[*/]\s*\(\s*(?:const\s+)?({_VEC})\s*&?\s*\w*\s*,\s*(?:const\s+)?({_VEC})\s*&?\s*\w*\s*\)"
)
NOTE = "// HIP's vector types define this element-wise operator themselves (ambiguous with a second one)"


def _body_end(text: str, start: int) -> int | None:
    """Offset after the `}` closing the body that opens after `start`; None for a declaration."""
    brace = text.find("{", start)
    semi = text.find(";", start)
    if brace < 0 or 0 <= semi < brace:
        return None
    depth = 0
    for i in range(brace, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return i + 1
    return None


def spans(text: str) -> list[tuple[int, int]]:
    """(first, last) line indices of each same-type vector `operator*`/`operator/` definition both
    toolchains compile, neighbours separated only by blank lines merged."""
    lines = text.splitlines(keepends=True)
    where = line_platforms(lines)
    starts = [0]
    for ln in lines:
        starts.append(starts[-1] + len(ln))
    out: list[tuple[int, int]] = []
    for m in DEFINITION.finditer(text):
        if m.group(1) != m.group(2):
            continue
        first = text.count("\n", 0, m.start())
        end = _body_end(text, m.end())
        if end is None or where[first] != "both":
            continue
        if not re.match(r"\s*\S", lines[first][: m.start() - starts[first]]) and first:
            first -= 1  # the return type and specifiers on the line above
        last = text.count("\n", 0, end - 1)
        if out and all(not ln.strip() for ln in lines[out[-1][1] + 1 : first]):
            out[-1] = (out[-1][0], last)
        else:
            out.append((first, last))
    return out


def guard(text: str) -> str:
    lines = text.splitlines(keepends=True)
    for first, last in reversed(spans(text)):
        if not lines[last].endswith("\n"):
            lines[last] += "\n"
        lines[first : last + 1] = [f"{NOTE}\n", "#ifndef USE_ROCM\n", *lines[first : last + 1], "#endif\n"]
    return "".join(lines)


def closure(ws: Workspace, rel: str) -> list[str]:
    graph = include_graph(ws.root)
    seen, todo = {rel}, [rel]
    while todo:
        for dep in graph.get(todo.pop(), set()) - seen:
            seen.add(dep)
            todo.append(dep)
    return sorted(seen)


class VectorOperatorFixer:
    """`a * b` ambiguous on HIP vector types -> the repo's duplicate operators under `#ifndef USE_ROCM`."""

    family = "vector_ops"
    kinds: tuple[str, ...] = ("compile_error", "compiler_dialect")

    def propose(self, failure: Failure, ws: Workspace) -> Proposal | None:
        if not AMBIGUOUS.search(failure.message or ""):
            return None
        edits: dict[str, tuple[str | None, str]] = {}
        for rel in closure(ws, target_file(failure)):
            text = ws.read(rel)
            if text is not None and (new := guard(text)) != text:
                edits[rel] = (text, new)
        if not edits:
            return None
        return make_proposal(
            failure,
            self.family,
            edits,
            (
                f"{', '.join(sorted(edits))}: element-wise `operator*`/`operator/` on two CUDA vectors of one type "
                f"are defined by the repo and, on ROCm, by HIP_vector_type itself (non-template friends), so "
                f"clang finds `a * b` ambiguous. The repo's definitions go under `#ifndef USE_ROCM`; HIP's compute "
                f"the same element-wise result. Nothing changes on CUDA."
            ),
            ws=ws,
        )


register(VectorOperatorFixer())
