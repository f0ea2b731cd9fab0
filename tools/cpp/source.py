"""One source file as the scanner sees it: raw text, a masked copy, and offset -> line/column.

The masked copy has every comment and string/char literal replaced by spaces (newlines kept), so
offsets agree with the raw text and no pattern can fire inside a comment or a string. Header names
of `#include "..."` are read from the raw text by the preprocessor walk.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from functools import cached_property

# Unrolled loops ("[^"\\]*(?:\\.[^"\\]*)*") instead of per-character alternation: same language,
# several times faster on long literals and comments.
_LEXEME = re.compile(
    r"//[^\n]*"
    r"|/\*[^*]*\*+(?:[^/*][^*]*\*+)*/|/\*[\s\S]*"
    r'|R"(?P<delim>[^()\\\s"]{0,16})\([\s\S]*?\)(?P=delim)"'
    r'|"[^"\\\n]*(?:\\.[^"\\\n]*)*"'
    r"|'(?:[^'\\\n]|\\.){1,8}'"
)


def _blank(match: re.Match[str]) -> str:
    text = match.group(0)
    if "\n" not in text:
        return " " * len(text)
    return "\n".join(" " * len(part) for part in text.split("\n"))


def mask_with_regex(text: str) -> str:
    """The text with comments and literals blanked to spaces; same length, same newlines."""
    return _LEXEME.sub(_blank, text)


def _compiled_mask() -> Callable[[str], str] | None:
    """The C twin of mask_with_regex (built at install time when a C compiler is there), unless
    ROCPORT_PURE_PYTHON is set (to compare the two)."""
    if os.environ.get("ROCPORT_PURE_PYTHON"):
        return None
    try:
        from tools.cpp._lexmask import mask
    except ImportError:
        return None
    return mask


compiled_mask = _compiled_mask()
"""None when the extension is not built (or switched off): masking then runs the regex."""
mask_comments_and_strings = compiled_mask or mask_with_regex
"""The text with comments and literals blanked to spaces; same length, same newlines."""


class SourceText:
    """A decoded file plus its masked twin; positions are character offsets into both."""

    def __init__(self, path: str, raw: str):
        self.path = path
        """Repo-relative path, '/'-separated."""
        self.raw = raw
        self._last = (0, 1)

    @cached_property
    def masked(self) -> str:
        """Comments and literals blanked (computed on first use: Python files never need it)."""
        return mask_comments_and_strings(self.raw)

    def offset_of(self, line: int, byte_col: int) -> int:
        """The offset of a 1-based line and a UTF-8 byte column (what `ast` reports)."""
        start = 0
        for _ in range(line - 1):
            nl = self.raw.find("\n", start)
            if nl < 0:
                break
            start = nl + 1
        prefix = self.raw[start : start + byte_col + 1].encode("utf-8", "surrogateescape")[:byte_col]
        return start + len(prefix.decode("utf-8", "replace"))

    def line_col(self, offset: int) -> tuple[int, int]:
        """1-based line and column of an offset. Counting newlines from the previous query keeps a
        run of increasing offsets linear in the file size."""
        last_offset, last_line = self._last
        if offset < last_offset:
            last_offset, last_line = 0, 1
        line = last_line + self.raw.count("\n", last_offset, offset)
        self._last = (offset, line)
        return line, offset - (self.raw.rfind("\n", 0, offset) + 1) + 1

    def line_text(self, offset: int) -> str:
        """The raw source line holding an offset, without its newline."""
        start = self.raw.rfind("\n", 0, offset) + 1
        end = self.raw.find("\n", offset)
        return self.raw[start:] if end < 0 else self.raw[start:end]
