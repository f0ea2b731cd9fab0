"""One process per run: `rocport port` holds an exclusive lock on runs/<id>/lock while it drives the run.

The lock is a kernel file lock (flock), so it is released the moment its holder exits, even by
kill -9: a killed run is resumable at once, and two `--resume` of one run can never interleave.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path


class RunLocked(RuntimeError):
    """Another live process drives this run; the message names it."""


class RunLock:
    """The held lock of one run directory; `release()` (or process exit) frees it."""

    def __init__(self, run_dir: Path):
        self.path = run_dir / "lock"
        self._fd: int | None = None

    def acquire(self, run_id: str) -> RunLock:
        """Take the lock or raise RunLocked naming the pid that holds it."""
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise RunLocked(
                f"run {run_id} is already running in process {holder}: wait for it to end, or stop it "
                f"(kill {holder}) and then `rocport port --resume {run_id}`"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None


def is_driven(run_dir: Path) -> bool:
    """Whether a live process holds the run's lock (a 'running' run that is not driven was killed)."""
    try:
        fd = os.open(run_dir / "lock", os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def clear_stale_git_locks(root: Path) -> list[str]:
    """Remove the lock files a git process killed mid-write leaves (`index.lock`, `HEAD.lock`, a ref's
    `.lock`): every later git command in the clone would fail on them. Only for a caller that knows no
    other git process works in `root` (a resumed run holding its run lock). Returns what was removed."""
    dot = Path(root) / ".git"
    if not dot.is_dir():
        return []
    found = [dot / "index.lock", dot / "HEAD.lock", dot / "ORIG_HEAD.lock"]
    if (dot / "refs").is_dir():
        found += sorted((dot / "refs").rglob("*.lock"))
    removed = []
    for lock in found:
        if lock.is_file() and not lock.is_symlink():
            lock.unlink()
            removed.append(str(lock.relative_to(dot)))
    return removed
