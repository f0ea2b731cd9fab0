"""Members defined outside their class without the declaration's `__host__ __device__`.

nvcc gives a member defined outside its class the execution space its declaration in the class has, so the
definition may leave it out. clang's HIP front end does not for members of class templates: the definition
is a second, host-only function, and hipcc says "__host__ function 'get' cannot overload __host__ __device__
function 'get'" (cusvna's `AA<T, Is...>`). The definitions of the class's members declared so get the
declaration's qualifiers through a compat-header macro that is empty on CUDA (`ROCPORT_HOST_DEVICE`,
`ROCPORT_DEVICE`): the CUDA tokens are unchanged. One edit takes every such definition of the class in the
file (the compiler reports each; they share one cause).
"""

from __future__ import annotations

import re

from agent.proposers.rules.base import Workspace, make_proposal, register
from agent.proposers.rules.compat_header import (
    add_block,
    compat_location,
    compat_view,
    find_compat,
    include_spelling,
)
from tools.records import Failure, Proposal

_OVERLOAD = re.compile(r"__host__ function '[^']+' cannot overload (__host__ __device__|__device__) function")
MACROS = {"__host__ __device__": "ROCPORT_HOST_DEVICE", "__device__": "ROCPORT_DEVICE"}
_QUALIFIED = re.compile(r"\b(\w+)\s*(?:<[^(){};]*>)?\s*::\s*(~?\w+|operator\b)")
_TEMPLATE_HEAD = re.compile(r"\s*template\s*<")
_STARTS = (">", ";", "}", "{", "*/")


def _block(macro: str, qualifiers: str) -> str:
    return (
        f"// {macro}: a member defined outside its class keeps its declaration's {qualifiers} on ROCm\n"
        f"// (clang's HIP front end does not carry it over; nvcc does, so it is empty on CUDA).\n"
        f"#ifdef USE_ROCM\n#define {macro} {qualifiers}\n#else\n#define {macro}\n#endif\n"
    )


def _declared(lines: list[str], qualifiers: str) -> set[str]:
    """Names of members declared with exactly `qualifiers` (`operator` for any operator)."""
    names = set()
    for line in lines:
        at = line.find(qualifiers)
        if at < 0 or (qualifiers == "__device__" and "__host__" in line):
            continue
        m = re.search(r"(~?\w+)\s*(?:<[^()]*>)?\s*\(", line[at + len(qualifiers) :])
        if m:
            names.add("operator" if "operator" in line[at:] else m.group(1))
    return names


def _head_end(line: str) -> int:
    """Where a definition's own words start on `line`: after its `template <...>` heads."""
    at = 0
    while m := _TEMPLATE_HEAD.match(line, at):
        depth, i = 0, m.end() - 1
        for i in range(m.end() - 1, len(line)):
            depth += {"<": 1, ">": -1}.get(line[i], 0)
            if depth == 0:
                break
        at = i + 1
    return len(line) - len(line[at:].lstrip())


def _starts_statement(lines: list[str], index: int) -> bool:
    prev = next((ln.strip() for ln in reversed(lines[:index]) if ln.strip()), "")
    return not prev or prev.startswith(("#", "//")) or prev.endswith(_STARTS)


def qualify(lines: list[str], index: int, qualifiers: str, macro: str) -> list[str] | None:
    """`lines` with `macro` in front of every out-of-class definition of the class that line `index` defines a
    member of, for the members declared with `qualifiers`; None when line `index` is not such a definition."""
    here = _QUALIFIED.search(lines[index]) if index < len(lines) else None
    if here is None or not _starts_statement(lines, index):
        return None
    cls, names = here.group(1), _declared(lines, qualifiers) | {here.group(2)}
    out = list(lines)
    for i, line in enumerate(lines):
        m = _QUALIFIED.search(line)
        if (
            not m
            or m.group(1) != cls
            or m.group(2) not in names
            or (i != index and not _starts_statement(lines, i))
        ):
            continue
        if "__host__" in line or "__device__" in line or macro in line or line.rstrip().endswith(";"):
            continue
        at = _head_end(line)
        out[i] = f"{line[:at]}{macro} {line[at:]}"
    return out if out != lines else None


class ExecSpaceFixer:
    """`__host__ function 'X' cannot overload __host__ __device__ function 'X'` -> the out-of-class
    definitions take the declaration's qualifiers through a macro empty on CUDA."""

    family = "exec_space"
    kinds: tuple[str, ...] = ("compile_error", "compiler_dialect")

    def propose(self, failure: Failure, ws: Workspace) -> Proposal | None:
        m = _OVERLOAD.search(failure.message or "")
        if m is None or not failure.line:
            return None
        view = compat_view(ws, failure)
        if view is None:
            return None
        rel, text, have = view
        qualifiers = m.group(1)
        macro = MACROS[qualifiers]
        lines = text.splitlines(keepends=True)
        new = qualify(lines, failure.line - 1, qualifiers, macro)
        if new is None:
            return None
        edits = add_block(ws, rel, None if f"define {macro}" in have else _block(macro, qualifiers))
        body = "".join(new)
        if rel in edits:  # the file did not include the compat header yet: it does, with the macro
            from agent.proposers.rules.warp import add_include  # warp imports compat_header

            body = add_include(body, include_spelling(find_compat(ws, rel) or compat_location(ws, rel), rel))
        edits[rel] = (text, body)
        count = sum(a != b for a, b in zip(lines, new, strict=True))
        return make_proposal(
            failure,
            self.family,
            edits,
            (
                f"{rel}:{failure.line}: {failure.message}. nvcc gives a member defined outside its class the "
                f"execution space of its declaration; clang's HIP front end does not for class templates, so the "
                f"definition was a second, host-only function. {count} out-of-class definition(s) of the class's "
                f"{qualifiers} members now say `{macro}`, which the compat header defines as `{qualifiers}` on ROCm "
                f"and as nothing on CUDA."
            ),
            ws=ws,
        )


register(ExecSpaceFixer())
