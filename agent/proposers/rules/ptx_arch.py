"""Which PTX an asm statement's ROCm form should follow when CUDA picks it by architecture.

hipcc defines no `__CUDA_ARCH__`, so in `#if __CUDA_ARCH__ >= 700` (or `defined(__CUDA_ARCH__) && ...`)
`... #else ... #endif` ROCm compiles the `#else` branch: the fallback for old NVIDIA GPUs. In memory-ordering
code the two branches differ in strength, e.g. `ld.global.acquire.gpu` on sm_70+ and a weak `ld.global.cg`
before it (cross-CTA semaphores and flags): translating the fallback would give ROCm weaker ordering than
every current NVIDIA GPU runs (and MI300's per-CU caches need the agent-scope acquire/release to see other
blocks' writes). So when each branch is one asm statement and nothing else, the ROCm form is taken from the
newer-architecture branch; the CUDA code of both branches stays as it is. The same holds for the inverted
`#if __CUDA_ARCH__ < 700` (true on ROCm, where the undefined name reads as 0) with the newer form in `#else`.
"""

from __future__ import annotations

import re

_IF = re.compile(r"\s*#\s*if(?:n?def)?\b")
_ELSE = re.compile(r"\s*#\s*else\b")
_ELIF = re.compile(r"\s*#\s*elif\b")
_ENDIF = re.compile(r"\s*#\s*endif\b")
_NEWER = re.compile(r"^\s*#\s*if\b(?=.*\b__CUDA_ARCH__\s*>=?\s*\d+)(?!.*(?:<|\|\||!\s*defined))")
_OLDER = re.compile(r"^\s*#\s*if\b(?=.*\b__CUDA_ARCH__\s*<=?\s*\d+)(?!.*(?:>|&&))")
_ASM = re.compile(r"[ \t]*asm\b\s*(?:volatile\b|__volatile__\b)?\s*\(")


def _quiet(line: str) -> bool:
    """A blank or comment-only line."""
    text = line.strip()
    return not text or text.startswith(("//", "/*", "*"))


def newer_branch(text: str, start: int, end: int) -> tuple[int, int] | None:
    """(start, end) offsets of the one asm statement in the newer-architecture branch of the two-way
    `#if __CUDA_ARCH__ >= N` (its `#if`) / `#if __CUDA_ARCH__ < N` (its `#else`) whose other branch, the one
    hipcc compiles, is only the asm statement `text[start:end]`; None for any other shape."""
    lines = text.splitlines(keepends=True)
    first, last = text.count("\n", 0, start), text.count("\n", 0, end)
    i = first - 1
    while i >= 0 and _quiet(lines[i]):
        i -= 1
    j = last + 1
    while j < len(lines) and _quiet(lines[j]):
        j += 1
    if i < 0 or j >= len(lines):
        return None
    if _ELSE.match(lines[i]) and _ENDIF.match(lines[j]):  # the fallback of `>= N`: the newer is the #if
        k = _matching_if(lines, i)
        return _only_asm(lines, k + 1, i) if k is not None and _NEWER.match(lines[k]) else None
    if (
        _IF.match(lines[i]) and _OLDER.match(lines[i]) and _ELSE.match(lines[j])
    ):  # `< N`: the newer is the #else
        endif = next(
            (n for n in range(j + 1, len(lines)) if _IF.match(lines[n]) or _ENDIF.match(lines[n])), None
        )
        if endif is None or not _ENDIF.match(lines[endif]):
            return None
        return _only_asm(lines, j + 1, endif)
    return None


def _matching_if(lines: list[str], else_at: int) -> int | None:
    """Index of the `#if` whose `#else` is at `else_at`; None when an `#elif` makes it a longer chain."""
    depth = 0
    for k in range(else_at - 1, -1, -1):
        if _ENDIF.match(lines[k]):
            depth += 1
        elif _IF.match(lines[k]):
            if depth == 0:
                return k
            depth -= 1
        elif _ELIF.match(lines[k]) and depth == 0:
            return None  # more than two choices
    return None


def _only_asm(lines: list[str], lo: int, hi: int) -> tuple[int, int] | None:
    """Offsets of the asm statement that lines[lo:hi] consist of (besides blank/comment lines), or None."""
    body_start = sum(len(ln) for ln in lines[:lo])
    body = "".join(lines[lo:hi])
    asm = list(_ASM.finditer(body))
    if len(asm) != 1:
        return None
    semi = _statement_end(body, asm[0].end() - 1)
    rest = body[: asm[0].start()] + body[semi:]
    if semi < 0 or not all(_quiet(ln) for ln in rest.splitlines()):
        return None
    return body_start + asm[0].start(), body_start + semi


def matching_paren(text: str, open_paren: int) -> int:
    """Index of the `)` matching the `(` at `open_paren` (strings skipped), or -1."""
    depth, quote = 0, False
    for i in range(open_paren, len(text)):
        ch = text[i]
        if ch == '"' and text[i - 1] != "\\":
            quote = not quote
        elif not quote and ch == "(":
            depth += 1
        elif not quote and ch == ")":
            depth -= 1
            if depth == 0:
                return i
    return -1


def _statement_end(text: str, open_paren: int) -> int:
    """Offset just past the `;` closing the asm statement whose `(` is at `open_paren`, or -1."""
    close = matching_paren(text, open_paren)
    if close < 0:
        return -1
    semi = text.find(";", close)
    return semi + 1 if semi > 0 and not text[close + 1 : semi].strip() else -1
