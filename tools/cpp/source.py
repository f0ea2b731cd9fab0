"""One source file as the scanner sees it: raw text, a masked copy, and offset -> line/column.

The masked copy has every comment and string/char literal replaced by spaces (newlines kept), so
offsets agree with the raw text and no pattern can fire inside a comment or a string. Header names
of `#include "..."` are read from the raw text by the preprocessor walk.
"""

from __future__ import annotations

import bisect
import os
import re
from collections.abc import Callable
from functools import cached_property, lru_cache
from types import ModuleType

from tools.regex_memo import compile_pattern

# Unrolled loops ("[^"\\]*(?:\\.[^"\\]*)*") instead of per-character alternation: same language,
# several times faster on long literals and comments.
_LEXEME = compile_pattern(
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


WordStarts = dict[str, list[int]]
"""Word -> offsets where it starts, in increasing order."""


_WORD_CHARS = compile_pattern(r"\w*")


@lru_cache(maxsize=8)
def _prefixed_word(prefixes: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("(?:" + "|".join(re.escape(p) for p in prefixes if p) + r")\w*")


def words_with_regex(text: str, prefixes: tuple[str, ...]) -> WordStarts:
    """Every word (maximal run of regex \\w characters) that begins with one of `prefixes` (made
    of word characters), mapped to its start offsets. A match that starts inside a word runs to
    that word's end, so it never hides the start of another word; it is dropped."""
    found: WordStarts = {}
    if any(not _WORD_CHARS.fullmatch(p) for p in prefixes):
        raise ValueError("words() prefixes must be made of word characters")
    if not any(prefixes):
        return found
    for m in _prefixed_word(prefixes).finditer(text):
        start = m.start()
        if start and (text[start - 1].isalnum() or text[start - 1] == "_"):
            continue
        found.setdefault(m.group(0), []).append(start)
    return found


def _compiled() -> ModuleType | None:
    """The C twins of mask_with_regex, words_with_regex and preprocessor.directives_with_regex
    (built at install time when a C compiler is there), unless ROCPORT_PURE_PYTHON is set (to
    compare the two)."""
    if os.environ.get("ROCPORT_PURE_PYTHON"):
        return None
    try:
        from tools.cpp import _lexmask
    except ImportError:
        return None
    # A build from before `words`/`directives` existed (a checkout updated without reinstalling):
    # the Python twins give the same results.
    if not all(hasattr(_lexmask, name) for name in ("mask", "words", "mask_words", "directives")):
        return None
    return _lexmask


_C = _compiled()
compiled_mask: Callable[[str], str] | None = _C.mask if _C else None
"""None when the extension is not built (or switched off): masking then runs the regex."""
compiled_words: Callable[[str, tuple[str, ...]], WordStarts] | None = _C.words if _C else None
compiled_directives: Callable[[str, frozenset[str]], list[tuple[int, str, int, int]]] | None = (
    _C.directives if _C else None
)
compiled_mask_words: Callable[[str, tuple[str, ...]], tuple[str, WordStarts]] | None = (
    _C.mask_words if _C else None
)
mask_comments_and_strings = compiled_mask or mask_with_regex
"""The text with comments and literals blanked to spaces; same length, same newlines."""
words_with_prefixes = compiled_words or words_with_regex
"""Every word beginning with one of the prefixes -> its start offsets (see words_with_regex)."""


def mask_words_with_regex(text: str, prefixes: tuple[str, ...]) -> tuple[str, WordStarts]:
    """The masked text and its words beginning with one of `prefixes` (the C twin: one pass)."""
    masked = mask_with_regex(text)
    return masked, words_with_regex(masked, prefixes)


mask_and_words = compiled_mask_words or mask_words_with_regex


class SourceText:
    """A decoded file plus its masked twin; positions are character offsets into both."""

    def __init__(self, path: str, raw: str, word_prefixes: tuple[str, ...] = ()):
        """`word_prefixes`: the tuple `words` will be asked for, found while masking (one pass)."""
        self.path = path
        """Repo-relative path, '/'-separated."""
        self.raw = raw
        self._marks = [0]
        self._mark_lines = [1]
        self._word_prefixes = word_prefixes
        self._words: tuple[tuple[str, ...], WordStarts] | None = None

    @cached_property
    def masked(self) -> str:
        """Comments and literals blanked (computed on first use: Python files never need it)."""
        if not self._word_prefixes:
            return mask_comments_and_strings(self.raw)
        masked, found = mask_and_words(self.raw, self._word_prefixes)
        self._words = (self._word_prefixes, found)
        return masked

    def words(self, prefixes: tuple[str, ...]) -> WordStarts:
        """Words of the masked text that begin with one of `prefixes` -> their start offsets: one
        pass per file for every detector that asks with the same tuple."""
        masked = self.masked  # with word_prefixes, this finds their words too
        if self._words is None or self._words[0] is not prefixes:
            self._words = (prefixes, words_with_prefixes(masked, prefixes))
        return self._words[1]

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
        """1-based line and column of an offset. Newlines are counted from the nearest earlier
        query, so the detectors' runs of offsets (each in increasing order) cost about one count
        over the file, not one per run."""
        return self._line(offset), offset - (self.raw.rfind("\n", 0, offset) + 1) + 1

    def _line(self, offset: int) -> int:
        i = bisect.bisect_right(self._marks, offset) - 1
        line = self._mark_lines[i] + self.raw.count("\n", self._marks[i], offset)
        if offset > self._marks[i]:
            self._marks.insert(i + 1, offset)
            self._mark_lines.insert(i + 1, line)
        return line

    def lines_at(self, offsets: list[int]) -> list[int]:
        """1-based line numbers of offsets given in increasing order: newlines counted once, from
        the nearest earlier query to the last offset (which later queries then start from)."""
        if not offsets:
            return []
        i = bisect.bisect_right(self._marks, offsets[0]) - 1
        out, line, last, count = [], self._mark_lines[i], self._marks[i], self.raw.count
        for offset in offsets:
            line += count("\n", last, offset)
            last = offset
            out.append(line)
        if last > self._marks[-1]:
            self._marks.append(last)
            self._mark_lines.append(line)
        return out

    def place(self, offset: int) -> tuple[int, int, str]:
        """line_col(offset) and line_text(offset) together (one search for the line start)."""
        line = self._line(offset)
        start = self.raw.rfind("\n", 0, offset) + 1
        end = self.raw.find("\n", offset)
        return line, offset - start + 1, self.raw[start:] if end < 0 else self.raw[start:end]

    def line_text(self, offset: int) -> str:
        """The raw source line holding an offset, without its newline."""
        start = self.raw.rfind("\n", 0, offset) + 1
        end = self.raw.find("\n", offset)
        return self.raw[start:] if end < 0 else self.raw[start:end]
