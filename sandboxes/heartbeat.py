"""The owner's heartbeat: files this process touches every few seconds while it lives.

A container cannot see the host's pids, so a DockerSandbox container watches a heartbeat file in
its bind-mounted log folder instead: its main process exits (and the kernel ends every process
in the container with it) once the file is older than STALE ticks. kill -9 stops the touching,
so a killed run's container and its server stop by themselves within a minute, with no rocport
command run afterwards.
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

STALE_TICKS = 6
"""A file untouched for this many ticks means the owner is gone (5 s ticks: stopped within ~35 s)."""


def tick_s() -> float:
    """Seconds between touches; ROCPORT_HEARTBEAT_S shortens it (tests)."""
    try:
        return max(0.2, float(os.environ.get("ROCPORT_HEARTBEAT_S", "5")))
    except ValueError:
        return 5.0


class _Heart:
    """One daemon thread for the whole process, touching every registered file."""

    def __init__(self) -> None:
        self.files: set[Path] = set()
        self.lock = threading.Lock()
        self.wake = threading.Event()
        self.thread: threading.Thread | None = None

    def beat(self) -> None:
        while True:
            with self.lock:
                files = list(self.files)
            for path in files:
                # removed by close() meanwhile
                with contextlib.suppress(OSError):
                    path.touch()
            self.wake.wait(tick_s())
            self.wake.clear()

    def add(self, path: Path) -> None:
        path.touch()
        with self.lock:
            self.files.add(path)
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(target=self.beat, name="rocport-heartbeat", daemon=True)
                self.thread.start()

    def remove(self, path: Path) -> None:
        with self.lock:
            self.files.discard(path)
        path.unlink(missing_ok=True)


_HEART = _Heart()


def start_heartbeat(path: Path) -> Path:
    """Touch `path` now and every tick while this process lives."""
    _HEART.add(path)
    return path


def stop_heartbeat(path: Path) -> None:
    """Stop touching `path` and remove it."""
    _HEART.remove(path)


def keepalive_argv(path: Path) -> list[str]:
    """A container's main process: wait, reap, and exit once `path` goes stale (or TERM arrives)."""
    tick = tick_s()
    script = (
        'trap "exit 0" TERM INT; '
        'while :; do sleep "$2" & wait $!; '
        'seen=$(stat -c %Y "$1" 2>/dev/null) || exit 0; '
        '[ $(( $(date +%s) - seen )) -gt "$3" ] && exit 0; done'
    )
    return ["sh", "-c", script, "rocport-keepalive", str(path), f"{tick:g}", str(int(tick * STALE_TICKS) + 1)]
