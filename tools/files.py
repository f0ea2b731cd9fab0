"""Reading repo files without hanging: only regular files are opened for reading.

A repo is untrusted input. A FIFO named `x.cu` blocks a plain open() forever (no writer ever comes),
and a device node streams without end; both are opened here without blocking and refused.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path


class NotRegularFile(OSError):
    """The path is a FIFO, socket or device: nothing rocport reads as source."""


def read_regular(path: str | os.PathLike, limit: int | None = None) -> bytes:
    """The bytes of a regular file (at most `limit` of them); NotRegularFile for anything else."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegularFile(f"{path}: not a regular file (a FIFO, socket or device); skipped")
        return fh.read() if limit is None else fh.read(limit)


def read_regular_text(path: str | os.PathLike) -> str:
    """A regular file's text, undecodable bytes replaced (source kept readable, never a traceback)."""
    return read_regular(Path(path)).decode("utf-8", errors="replace")
