"""Reading repo files without hanging: only regular files are opened for reading.

A repo is untrusted input. A FIFO named `x.cu` blocks a plain open() forever (no writer ever comes),
and a device node streams without end; both are opened here without blocking and refused.
"""

from __future__ import annotations

import os
import stat


def path_text(path: str | os.PathLike[str]) -> str:
    """`str(pathlib.Path(path))` on POSIX, without importing pathlib (~4 ms of a `rocport scan` start):
    repeated and trailing slashes and `.` parts dropped, `..` kept, and POSIX's `//` prefix kept."""
    text = os.fspath(path)
    lead = (
        "//" if text.startswith("//") and not text.startswith("///") else "/" if text.startswith("/") else ""
    )
    return lead + "/".join(part for part in text.split("/") if part not in ("", ".")) or "."


def user_cache_dir() -> str:
    """rocport's own cache directory: $ROCPORT_CACHE_DIR, else $XDG_CACHE_HOME/rocport, else
    ~/.cache/rocport (the scan's result cache, parse memos and compiled patterns live under it)."""
    base = os.environ.get("ROCPORT_CACHE_DIR")
    if base:
        return base
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(xdg, "rocport")


def stays_inside(rel: str) -> bool:
    """Whether a relative path (os.path.relpath's) stays inside its base: no leading `..` part."""
    return rel != ".." and not rel.startswith("../")


def path_suffix(path: str) -> str:
    """`pathlib.PurePath(path).suffix`: the last part's extension; none for `.bashrc`-like names."""
    last = path.rstrip("/").rpartition("/")[2]
    dot = last.rfind(".")
    return last[dot:] if 0 < dot < len(last) - 1 else ""


class NotRegularFile(OSError):
    """The path is a FIFO, socket or device: nothing rocport reads as source."""


def read_regular(path: str | os.PathLike[str], limit: int | None = None) -> bytes:
    """The bytes of a regular file (at most `limit` of them); NotRegularFile for anything else."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegularFile(f"{path}: not a regular file (a FIFO, socket or device); skipped")
        # Sized from fstat (one byte more, to see growth): a buffered read(limit) allocates the
        # whole limit per file, which a tree scan pays hundreds of times.
        want = info.st_size + 1 if limit is None else min(limit, info.st_size + 1)
        parts = [os.read(fd, want)]
        got, asked = len(parts[0]), want
        # A short read of a regular file is its end: asking again would cost a syscall per file.
        while len(parts[-1]) == asked and (limit is None or got < limit):
            asked = 1 << 20 if limit is None else min(1 << 20, limit - got)
            parts.append(os.read(fd, asked))
            got += len(parts[-1])
        return b"".join(parts)
    finally:
        os.close(fd)


def read_regular_text(path: str | os.PathLike[str]) -> str:
    """A regular file's text, undecodable bytes replaced (source kept readable, never a traceback)."""
    return read_regular(path).decode("utf-8", errors="replace")
