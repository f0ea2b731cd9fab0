"""Read a log line by line with bounded memory, and peel off the prefixes wrappers add.

Every line goes through `prefixes.expand_line` first (prefixes, markdown, JSON-lines records,
vLLM logs whose newlines were lost); indentation is kept because tracebacks depend on it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from tools.diagnose.prefixes import clean_line, expand_line

__all__ = ["DiagnoseError", "clean_line", "iter_file_lines", "iter_text_lines", "looks_binary"]

MAX_LINE_BYTES = 64 * 1024
"""Longer lines are cut: a minified blob or a binary run must not blow memory."""
SNIFF_BYTES = 8192


class DiagnoseError(Exception):
    """Bad input for diagnosis (missing file, binary file); the message says what to do."""


def looks_binary(chunk: bytes) -> bool:
    """True when a chunk is not text: NUL bytes or mostly control characters."""
    if not chunk:
        return False
    if b"\x00" in chunk:
        return True
    control = sum(1 for b in chunk if b < 32 and b not in (9, 10, 12, 13, 27))
    return control / len(chunk) > 0.10


def _read_bounded(stream: BinaryIO) -> Iterator[bytes]:
    """Yield lines of at most MAX_LINE_BYTES; the rest of an over-long line is skipped."""
    while True:
        raw = stream.readline(MAX_LINE_BYTES)
        if not raw:
            return
        if not raw.endswith(b"\n") and len(raw) == MAX_LINE_BYTES:
            while True:  # drain the remainder of the long line without keeping it
                rest = stream.readline(MAX_LINE_BYTES)
                if not rest or rest.endswith(b"\n"):
                    break
        yield raw


def iter_file_lines(path: str | Path) -> Iterator[str]:
    """Stream the cleaned lines of a log file; raise DiagnoseError for unusable input."""
    p = Path(path)
    if not p.exists():
        raise DiagnoseError(f"log file not found: {p} (pass the path of a build or server log)")
    if p.is_dir():
        raise DiagnoseError(f"{p} is a directory, not a log file (pass one log file)")
    try:
        stream = p.open("rb")
    except OSError as exc:
        raise DiagnoseError(f"cannot read {p}: {exc.strerror} (check the path and permissions)") from exc
    with stream:
        head = stream.read(SNIFF_BYTES)
        if looks_binary(head):
            raise DiagnoseError(
                f"{p} looks like a binary file, not a text log (pass the build or server log)"
            )
        stream.seek(0)
        for raw in _read_bounded(stream):
            yield from expand_line(raw.decode("utf-8", errors="replace"))


def iter_text_lines(text: str) -> Iterator[str]:
    """Cleaned lines of an in-memory log."""
    for raw in text.splitlines():
        yield from expand_line(raw[:MAX_LINE_BYTES])
