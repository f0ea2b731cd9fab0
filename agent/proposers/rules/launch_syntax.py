"""Kernel launches whose chevrons are split by spaces (`kernel<< <grid, block >> >(args)`, what some editors'
formatters write): nvcc reads them as a launch, clang's HIP front end only takes `<<<` and `>>>` written whole
("expected expression"). The chevrons are joined where they open and close one launch; everything else stays.

CUDA compiles the same tokens: `<< <` and `<<<` are one launch to nvcc, and the identity proof compares the
preprocessed output token by token, punctuation split into single characters.
"""

from __future__ import annotations

import re

from agent.proposers.rules.base import Workspace, make_proposal, register
from agent.proposers.rules.headers import target_file
from tools.records import Failure, Proposal

_OPEN = re.compile(r"<(\s*)<(\s*)<")
_CLOSE = re.compile(r">(\s*)>(\s*)>")


def _close_of(text: str, start: int) -> re.Match[str] | None:
    """The `> > >` that closes the launch configuration opened just before `start` (brackets balanced, and the
    kernel's argument list right after it)."""
    depth = 0
    i = start
    while i < len(text):
        ch = text[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth < 0:
                return None
        elif ch == ";":
            return None
        elif ch == ">" and depth == 0:
            m = _CLOSE.match(text, i)
            if m and re.match(r"\s*\(", text[m.end() :]):
                return m
        i += 1
    return None


def join_chevrons(text: str) -> str:
    """`text` with every space-split launch chevron pair written `<<<`/`>>>`; launches already whole stay."""
    out, pos = [], 0
    for m in _OPEN.finditer(text):
        if m.start() < pos or not (m.group(1) or m.group(2)):
            continue
        close = _close_of(text, m.end())
        if close is None:
            continue
        out += [text[pos : m.start()], "<<<", text[m.end() : close.start()], ">>>"]
        pos = close.end()
    return "".join(out) + text[pos:] if out else text


class SplitChevronFixer:
    """`<< <` ... `>> >` launches hipcc cannot parse -> `<<<` ... `>>>`, the same tokens for nvcc."""

    family = "launch_syntax"
    kinds: tuple[str, ...] = ("compile_error",)

    def propose(self, failure: Failure, ws: Workspace) -> Proposal | None:
        if not failure.line or not (failure.message or "").startswith("expected"):
            return None
        rel = target_file(failure)
        text = ws.read(rel)
        if text is None:
            return None
        lines = text.splitlines()
        near = "\n".join(lines[max(failure.line - 2, 0) : failure.line + 1])
        if not any(m.group(1) or m.group(2) for m in _OPEN.finditer(near)):
            return None
        new = join_chevrons(text)
        return make_proposal(
            failure,
            self.family,
            {rel: (text, new)},
            (
                f"{rel}: kernel launches written with split chevrons (`<< <` ... `>> >`) are a launch to nvcc, "
                f"but clang's HIP front end takes only `<<<`/`>>>` ({failure.message}); the chevrons are joined, "
                f"which is the same token sequence for nvcc, so nothing changes on CUDA."
            ),
            ws=ws,
        )


register(SplitChevronFixer())
