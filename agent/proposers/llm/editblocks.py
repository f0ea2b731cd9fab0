"""Search/replace edits from a model: exact match, then whitespace-tolerant, then "did you mean"."""

from __future__ import annotations

import difflib
from dataclasses import dataclass


@dataclass
class EditResult:
    ok: bool
    text: str
    """The new file text when ok, else the unchanged text."""
    message: str
    """What happened, phrased as feedback the model can act on."""


def apply_edit(text: str, search: str, replace: str) -> EditResult:
    """Replace exactly one occurrence of `search` in `text`."""
    if not search.strip():
        return EditResult(False, text, "the search block is empty: quote the lines to replace exactly")
    count = text.count(search)
    if count == 1:
        return EditResult(True, text.replace(search, replace, 1), "applied (exact match)")
    if count > 1:
        return EditResult(
            False,
            text,
            f"the search block matches {count} places: include more surrounding "
            f"lines so it matches exactly one",
        )
    fuzzy = _whitespace_tolerant(text, search, replace)
    if fuzzy is not None:
        return EditResult(True, fuzzy, "applied (matched ignoring indentation and trailing whitespace)")
    hint = did_you_mean(text, search)
    msg = "the search block does not match the file"
    if hint:
        msg += f"; did you mean these lines?\n{hint}"
    return EditResult(False, text, msg)


def _whitespace_tolerant(text: str, search: str, replace: str) -> str | None:
    """Match line by line ignoring leading/trailing whitespace; re-indent the replacement to the file's."""
    lines = text.splitlines(keepends=True)
    want = [ln.strip() for ln in search.strip("\n").splitlines()]
    n = len(want)
    hits = [i for i in range(len(lines) - n + 1) if [ln.strip() for ln in lines[i : i + n]] == want]
    if len(hits) != 1:
        return None
    start = hits[0]
    file_indent = _indent(lines[start])
    search_indent = _indent(search.strip("\n").splitlines()[0])
    new_lines = []
    for ln in replace.strip("\n").splitlines():
        body = ln[len(search_indent) :] if ln.startswith(search_indent) else ln.lstrip()
        new_lines.append((file_indent + body if ln.strip() else "") + "\n")
    return "".join(lines[:start] + new_lines + lines[start + n :])


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def did_you_mean(text: str, search: str, max_lines: int = 12) -> str:
    """The run of file lines most similar to `search`, for feedback on a miss."""
    lines = text.splitlines()
    want = search.strip("\n").splitlines()
    if not lines or not want:
        return ""
    n = len(want)
    best, best_ratio = 0, 0.0
    target = "\n".join(w.strip() for w in want)
    for i in range(max(1, len(lines) - n + 1)):
        window = "\n".join(ln.strip() for ln in lines[i : i + n])
        ratio = difflib.SequenceMatcher(None, window, target, autojunk=False).ratio()
        if ratio > best_ratio:
            best, best_ratio = i, ratio
    if best_ratio < 0.5:
        return ""
    return "\n".join(lines[best : best + min(n, max_lines)])
