"""Read a log line by line with bounded memory, and peel off the prefixes wrappers add.

Build and server logs arrive wrapped: docker/CI timestamps, BuildKit step prefixes, ANSI
colours, progress bars redrawn with carriage returns, vLLM/sglang logger prefixes, pip's
indentation of a subprocess's output. The parsers want the tool's own text, so every line
goes through `clean_line` first; indentation is kept because tracebacks depend on it.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

MAX_LINE_BYTES = 64 * 1024
"""Longer lines are cut: a minified blob or a binary run must not blow memory."""
SNIFF_BYTES = 8192


class DiagnoseError(Exception):
    """Bad input for diagnosis (missing file, binary file); the message says what to do."""


_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07")
_PREFIXES = [  # (the characters such a prefix starts with, the prefix)
    # docker logs -t / GitHub Actions: 2024-05-01T12:00:00.123456789Z
    ("0123456789", re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)? ")),
    # BuildKit plain progress: "#12 34.56 "
    ("#", re.compile(r"^#\d+ \d+\.\d+ ")),
    # vLLM worker tag: "(EngineCore pid=29429) ", "(VllmWorkerProcess pid=87359) "
    ("(", re.compile(r"^\([\w -]+ pid=\d+\) ")),
    # vLLM logger: "ERROR 06-07 12:15:23 [core.py:1165] " and older "ERROR 12-05 20:24:46 engine.py:366] "
    ("DIWEC", re.compile(r"^(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? "
                         r"\[?[\w./-]+:\d+\](?: |$)")),
    # torch distributed: "[rank0]: "
    ("[", re.compile(r"^\[rank\d+\]: ?")),
    # sglang: "[2025-03-20 00:44:38 TP3] ", "[2025-03-20 00:44:38] "
    ("[", re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)?(?: [A-Z]{2,4}\d+)*\] ")),
]


def clean_line(raw: str) -> str:
    """The tool's own text of one log line: no colours, redraws, or wrapper prefixes."""
    line = raw.rstrip("\r\n")
    if "\x1b" in line:
        line = _ANSI.sub("", line)
    if "\r" in line:
        line = line.rstrip("\r").rsplit("\r", 1)[-1]
    changed = True
    while changed and line:  # prefixes stack: timestamp, then worker tag, then logger
        changed = False
        first = line[0]
        for starts, pattern in _PREFIXES:
            if first in starts:
                stripped = pattern.sub("", line, count=1)
                if stripped != line:
                    line, changed = stripped, True
                    break
    return line


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
            raise DiagnoseError(f"{p} looks like a binary file, not a text log (pass the build or server log)")
        stream.seek(0)
        for raw in _read_bounded(stream):
            yield clean_line(raw.decode("utf-8", errors="replace"))


def iter_text_lines(text: str) -> Iterator[str]:
    """Cleaned lines of an in-memory log."""
    for raw in text.splitlines():
        yield clean_line(raw[:MAX_LINE_BYTES])
