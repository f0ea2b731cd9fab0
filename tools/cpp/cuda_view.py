"""What the CUDA build reads of one file, found without running nvcc: the file's logical lines with the
groups of `#if` conditions that only ROCm macros decide taken or dropped, and the lines that cannot
produce a token (blank, comment only) left out.

Two texts with equal views give nvcc the same tokens in every file that includes them, provided the
ROCm macros are never defined in the CUDA build (the caller checks that for the repo and its commands).
A guard patch (`#ifdef USE_ROCM <new> #else <old> #endif`) is proven that way in microseconds where
`nvcc -E` before and after takes seconds on a kernel that includes cub. Anything the walk cannot
reason about (an `#elif` it cannot decide after an undecided branch, unbalanced groups) gives None: the
caller then runs the preprocessor. Line numbers are not compared: `__LINE__` is pinned in the `-E`
proof too (agent.patch.identity), for the same reason.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from tools.cpp.build_configs import BuildConfig, Macro
from tools.cpp.conditions import evaluate
from tools.cpp.source import mask_comments_and_strings

_DIRECTIVE = re.compile(r"\s*#\s*([A-Za-z_]\w*)(.*)", re.DOTALL)
_CONDITIONAL = {"if", "ifdef", "ifndef"}
_BRANCH = {"elif", "elifdef", "elifndef", "else"}


def _logical_lines(raw: str, masked: str) -> Iterable[tuple[str, str]]:
    """(raw, masked) logical lines: a line ending in a backslash is joined with the next."""
    raw_lines, masked_lines = raw.split("\n"), masked.split("\n")
    held_raw: list[str] = []
    held_masked: list[str] = []
    for r, m in zip(raw_lines, masked_lines, strict=True):
        held_raw.append(r)
        held_masked.append(m)
        if r.rstrip("\r").endswith("\\"):
            continue
        yield "\n".join(held_raw), " ".join(x.rstrip("\r").rstrip("\\") for x in held_masked)
        held_raw, held_masked = [], []
    if held_raw:
        yield "\n".join(held_raw), " ".join(held_masked)


def _condition(name: str, rest: str) -> str:
    word = rest.split()[0] if rest.split() else ""
    if name in ("ifdef", "elifdef"):
        return f"defined({word})"
    if name in ("ifndef", "elifndef"):
        return f"!defined({word})"
    return rest


class _Frame:
    __slots__ = ("decided", "done", "taking")

    def __init__(self, decided: bool, taking: bool, done: bool):
        self.decided = decided
        """Every branch so far was decided by the known macros: its directives are left out of the view."""
        self.taking = taking
        self.done = done
        """A branch was taken (or the whole group is skipped): later branches are dead."""


def cuda_view(text: str, undefined: frozenset[str]) -> list[str] | None:
    """The lines CUDA reads, whitespace-normalised, with groups decided by `undefined` (macros never
    defined for CUDA) resolved; None when the file's conditionals cannot be walked."""
    config = BuildConfig("cuda-view", {name: Macro(False) for name in undefined})
    view: list[str] = []
    stack: list[_Frame] = []
    live = True
    for raw, masked in _logical_lines(text, mask_comments_and_strings(text)):
        directive = _DIRECTIVE.match(masked)
        name = directive.group(1) if directive else ""
        if name in _CONDITIONAL:
            if not live:
                stack.append(_Frame(True, False, True))
                continue
            value = evaluate(_condition(name, directive.group(2)).strip(), config)  # type: ignore[union-attr]
            if value is None:
                stack.append(_Frame(False, True, False))
                view.append(" ".join(raw.split()))
            else:
                stack.append(_Frame(True, bool(value), bool(value)))
        elif name in _BRANCH or name == "endif":
            if not stack:
                return None
            frame = stack[-1]
            if not frame.decided:
                if name == "endif":
                    stack.pop()
                view.append(" ".join(raw.split()))
                continue
            if name == "endif":
                stack.pop()
            elif frame.done:
                frame.taking = False
            elif name == "else":
                frame.taking = frame.done = True
            else:
                value = evaluate(_condition(name, directive.group(2)).strip(), config)  # type: ignore[union-attr]
                if value is None:
                    return None
                frame.taking = frame.done = bool(value)
        elif live and masked.strip():
            view.append(" ".join(raw.split()))
        live = all(f.taking for f in stack if f.decided)
    return None if stack else view


def same_for_cuda(before: str, after: str, undefined: frozenset[str]) -> bool:
    """True when nvcc reads the same lines of both texts (see cuda_view); False when it cannot tell."""
    if not undefined:
        return False
    old = cuda_view(before, undefined)
    return old is not None and old == cuda_view(after, undefined)
