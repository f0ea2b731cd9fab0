"""Just enough C preprocessor structure for the rules: includes and which platform branch a line is in.

A line is `cuda`-only inside `#ifndef USE_ROCM` (or the `#else` of `#ifdef USE_ROCM`), `rocm`-only
inside `#ifdef USE_ROCM`; the HIP platform macros count as USE_ROCM. Anything else is `both`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tools.cpp import ROCM_MACROS  # the shared source model's list

_MACRO = "|".join(re.escape(m) for m in ROCM_MACROS)
_IF_ROCM = re.compile(rf"^\s*#\s*(?:ifdef\s+(?:{_MACRO})\b|if\s+defined\s*\(?\s*(?:{_MACRO})\s*\)?\s*$)")
_IF_CUDA = re.compile(rf"^\s*#\s*(?:ifndef\s+(?:{_MACRO})\b|if\s+!\s*defined\s*\(?\s*(?:{_MACRO})\s*\)?\s*$)")
_IF_OTHER = re.compile(r"^\s*#\s*if")
_ELIF = re.compile(r"^\s*#\s*elif\b")
_ELSE = re.compile(r"^\s*#\s*else\b")
_ENDIF = re.compile(r"^\s*#\s*endif\b")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
_FLIP = {"rocm": "cuda", "cuda": "rocm", "other": "other"}


def branches(lines: list[str]) -> list[tuple[str, ...]]:
    """For each line, the stack of enclosing branches ('rocm', 'cuda', 'other'), outermost first."""
    stack: list[str] = []
    out: list[tuple[str, ...]] = []
    for line in lines:
        if _IF_ROCM.match(line):
            out.append(tuple(stack))
            stack.append("rocm")
            continue
        if _IF_CUDA.match(line):
            out.append(tuple(stack))
            stack.append("cuda")
            continue
        if _IF_OTHER.match(line):
            out.append(tuple(stack))
            stack.append("other")
            continue
        if stack and (_ELSE.match(line) or _ELIF.match(line)):
            out.append(tuple(stack[:-1]))
            stack[-1] = _FLIP[stack[-1]] if _ELSE.match(line) else "other"
            continue
        if stack and _ENDIF.match(line):
            out.append(tuple(stack[:-1]))
            stack.pop()
            continue
        out.append(tuple(stack))
    return out


def line_platforms(lines: list[str]) -> list[str]:
    """Per line: 'both', 'rocm', 'cuda' or 'dead' — which builds compile it, from the shared source model
    (tools.cpp evaluates the #if conditions; `__CUDA_ARCH__` branches are CUDA-only, not 'both')."""
    from tools.cpp import line_platforms as evaluated

    return evaluated("".join(ln if ln.endswith("\n") else ln + "\n" for ln in lines))


def platform_of(stack: tuple[str, ...]) -> str:
    """'cuda', 'rocm' or 'both': which toolchains compile a line with this branch stack."""
    if "cuda" in stack:
        return "cuda"
    if "rocm" in stack:
        return "rocm"
    return "both"


@dataclass
class GuardBlock:
    """An `#ifdef USE_ROCM ... #else ... #endif` block at top level: line indices of its directives."""

    start: int
    middle: int | None
    end: int
    rocm_first: bool
    """True for `#ifdef USE_ROCM` (ROCm branch first), False for `#ifndef USE_ROCM`."""


def guard_blocks(lines: list[str]) -> list[GuardBlock]:
    """Top-level ROCm/CUDA guard blocks (not nested in another conditional)."""
    blocks: list[GuardBlock] = []
    depth = 0
    current: dict | None = None
    for i, line in enumerate(lines):
        if _IF_OTHER.match(line):
            if depth == 0 and (_IF_ROCM.match(line) or _IF_CUDA.match(line)):
                current = {"start": i, "middle": None, "rocm_first": bool(_IF_ROCM.match(line))}
            depth += 1
        elif depth == 1 and current is not None and _ELSE.match(line):
            current["middle"] = i
        elif depth == 1 and current is not None and _ELIF.match(line):
            current = None  # #elif chains are not simple two-way guards
        elif _ENDIF.match(line) and depth:
            depth -= 1
            if depth == 0 and current is not None:
                blocks.append(GuardBlock(end=i, **current))
                current = None
    return blocks


def include_of(line: str) -> str | None:
    """The header named by an #include line, as written, or None."""
    m = INCLUDE.match(line)
    return m.group(2) if m else None


def includes_header(lines: list[str], header: str) -> bool:
    """True when any line includes exactly `header` (quotes or brackets)."""
    return any(include_of(line) == header for line in lines)
