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
from agent.proposers.rules.cudacc import enclosing
from tools.records import Failure, Proposal

_OVERLOAD = re.compile(
    r"__host__ function '(\w+)[^']*' cannot overload (__host__ __device__|__device__) function"
)
MACROS = {"__host__ __device__": "ROCPORT_HOST_DEVICE", "__device__": "ROCPORT_DEVICE"}
_MEMBER = re.compile(r"::\s*(~?\w+)")
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


def qualified(line: str) -> list[tuple[str, str]]:
    """(class, member) of each `Class<args>::member` on `line` that a definition there could declare (see
    _declarator); the template arguments are skipped by balancing their angle brackets, so `Interval<T>
    AA<T, Is...>::interval` is AA's."""
    out = []
    for m in _MEMBER.finditer(line):
        i = m.start() - 1
        while i >= 0 and line[i] == " ":
            i -= 1
        if i >= 0 and line[i] == ">":
            depth = 0
            while i >= 0:
                depth += {">": 1, "<": -1}.get(line[i], 0)
                i -= 1
                if depth == 0:
                    break
            while i >= 0 and line[i] == " ":
                i -= 1
        end = i + 1
        while i >= 0 and (line[i].isalnum() or line[i] == "_"):
            i -= 1
        if line[i + 1 : end] and _declarator(line, i + 1):
            out.append((line[i + 1 : end], m.group(1)))
    return out


_NOT_SPECIFIERS = re.compile(
    r"\b(?:return|throw|case|new|delete|co_return|co_yield|goto|else|do)\b|[=(){};+\-!?]"
)


def _declarator(line: str, start: int) -> bool:
    """True when the qualified name at `start` can be what a definition on this line declares: no directive,
    and only declaration specifiers (a return type) between the template heads and it, no expression."""
    if line.lstrip().startswith("#"):
        return False
    return not _NOT_SPECIFIERS.search(line[_head_end(line) : start].replace("::", ""))


def qualify(lines: list[str], index: int, qualifiers: str, macro: str, member: str) -> list[str] | None:
    """`lines` with `macro` in front of every out-of-class definition of the class whose `member` line `index`
    defines, for the members declared with `qualifiers`; None when line `index` is no such definition."""
    here = [c for c, m in qualified(lines[index]) if m == member] if index < len(lines) else []
    if not here or not _starts_statement(lines, index):
        return None
    cls, names = here[0], _declared(lines, qualifiers) | {member}
    out = list(lines)
    for i, line in enumerate(lines):
        if not any(c == cls and m in names for c, m in qualified(line)):
            continue
        if i != index and not _starts_statement(lines, i):
            continue
        if "__host__" in line or "__device__" in line or macro in line or line.rstrip().endswith(";"):
            continue
        at = _head_end(line)
        out[i] = f"{line[:at]}{macro} {line[at:]}"
    return out if out != lines else None


def _before_first_use(text: str, include: str, macro: str) -> str:
    """`text` with `include` above the first use of `macro`: where the file's last #include comes after it
    (a header that includes more at its end), it moves up to the first #include."""
    lines = text.splitlines(keepends=True)
    at, use = lines.index(include), next(i for i, ln in enumerate(lines) if macro in ln)
    if at < use:
        return text
    del lines[at]
    guard = re.match(r"\s*#\s*ifndef\s+(\w+)", lines[0]) if lines else None
    first = next(
        (
            i
            for i, ln in enumerate(lines)
            if re.match(r"\s*#\s*include\b", ln)
            and all(guard and d.split()[-1] == guard.group(1) for d in enclosing(lines, i))
        ),
        use,
    )
    return "".join([*lines[: min(first, use)], include, *lines[min(first, use) :]])


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
        qualifiers = m.group(2)
        macro = MACROS[qualifiers]
        lines = text.splitlines(keepends=True)
        new = qualify(lines, failure.line - 1, qualifiers, macro, m.group(1))
        if new is None:
            return None
        edits = add_block(ws, rel, None if f"define {macro}" in have else _block(macro, qualifiers))
        body = "".join(new)
        if rel in edits:  # the file did not include the compat header yet: it does, with the macro
            from agent.proposers.rules.warp import add_include  # warp imports compat_header

            spelling = include_spelling(find_compat(ws, rel) or compat_location(ws, rel), rel)
            body = _before_first_use(add_include(body, spelling), f'#include "{spelling}"\n', macro)
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
