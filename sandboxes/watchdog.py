"""Ends what a sandbox started when the rocport process that owns it dies (kill -9 included).

Every process a LocalSandbox starts carries `ROCPORT_SANDBOX=<session>` in its environment, and each
command also `ROCPORT_COMMAND=<id>`; the marker survives `setsid`, double forks and new process groups,
so it finds what process-group kills miss. Run as a script (stdlib only, no rocport imports):

    python watchdog.py OWNER_PID OWNER_START SESSION

It checks its owner every second; when the owner is gone (or its pid was reused) it TERMs, then
KILLs, every process carrying the session marker, and exits. A sandbox that closes normally ends
its watchdog itself.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time

POLL_S = 1.0
GRACE_S = 3.0


def process_start(pid: int) -> str:
    """The kernel's start time of `pid` (clock ticks since boot), '' when it does not exist."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            stat = fh.read()
    except OSError:
        return ""
    fields = stat[stat.rfind(")") + 2 :].split()  # the command name may hold spaces and ')'
    return fields[19] if len(fields) > 19 else ""


def marked(marker: str) -> list[int]:
    """Pids of this user's processes whose environment holds `marker` (e.g. ROCPORT_COMMAND=abc-3)."""
    needle = marker.encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as fh:
                environ = fh.read()
        except OSError:
            continue  # gone meanwhile, or another user's
        if needle in environ.split(b"\0"):
            found.append(int(name))
    return found


def kill_marked(marker: str, grace_s: float = GRACE_S) -> int:
    """TERM every marked process, KILL the ones still there after grace_s; returns how many were found."""
    pids = marked(marker)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        deadline = time.monotonic() + (grace_s if sig == signal.SIGTERM else 0)
        while time.monotonic() < deadline and any(process_start(p) for p in pids):
            time.sleep(0.05)
        pids = marked(marker)
        if not pids:
            break
    return len(pids)


def watch(owner: int, owner_start: str, session: str) -> None:
    """Wait for the owner to die, then end everything of its sandbox session."""
    while process_start(owner) == owner_start:
        time.sleep(POLL_S)
    kill_marked(f"ROCPORT_SANDBOX={session}")


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # the sandbox closed normally
    watch(int(sys.argv[1]), sys.argv[2], sys.argv[3])
