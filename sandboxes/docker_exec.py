"""Commands inside a running container: one `docker exec` each, output to bind-mounted files.

Each command runs under coreutils `timeout`, which puts itself and the command in a new process
group and signals that whole group when time is up; the host keeps its own deadline and kills
the group from outside if the inside one did not end it.
"""

from __future__ import annotations

import itertools
import time
from pathlib import Path
from typing import Any

import requests
from docker import DockerClient
from docker.errors import DockerException

from sandboxes.base import CommandResult, SandboxError
from sandboxes.local import _read_capped

GRACE_S = 5  # between the TERM and the KILL of a timed-out command
HOST_SLACK_S = 10  # past the inside deadline before the host kills the group itself

_RUN = f'timeout -k {GRACE_S} "$1" bash -c "$2" >"$3.out" 2>"$3.err" </dev/null & echo $! >"$3.pid"; wait $!'
# Every process of a command carries ROCPORT_COMMAND=<id> in its environment (setsid keeps it), so a
# timed-out command's escapees are found by that marker and killed too.
_KILL_MARKED = (
    'for d in /proc/[0-9]*; do grep -qsxz "ROCPORT_COMMAND=$1" "$d/environ" '
    '&& kill -9 "${d#/proc/}" 2>/dev/null; done; exit 0'
)
# TERM a process group, wait up to $2 ticks of 50 ms for its leader ($1) to end (gone, or a zombie its
# parent has yet to reap), then KILL what is left of the group: a service's whole stop in one exec.
_END_GROUP = (
    'kill -s TERM -- "-$1" 2>/dev/null; i=0; while [ "$i" -lt "$2" ] && [ -d "/proc/$1" ] '
    '&& [ "$(sed "s/.*) //;s/ .*//" "/proc/$1/stat" 2>/dev/null)" != Z ]; do sleep 0.05; i=$((i + 1)); done; '
    'kill -s KILL -- "-$1" 2>/dev/null; exit 0'
)
# `timeout 0` never fires; it is here for its process group and for forwarding TERM to the group.
# The pid file appears whole (written aside, then renamed): a reader never sees it created but empty.
_SPAWN = 'timeout 0 bash -c "$1" >>"$2" 2>&1 </dev/null & echo $! >"$3.tmp" && mv "$3.tmp" "$3"; wait $!'


class ExecRunner:
    """Runs and signals commands in one container, keeping their output in `logdir`."""

    def __init__(self, client: DockerClient, container_id: str, logdir: Path):
        self.api = client.api
        self.container_id = container_id
        self.logdir = logdir
        self._ids = itertools.count(1)

    def _start(self, argv: list[str], cwd: str, env: dict[str, str]) -> str:
        try:
            exec_id: str = self.api.exec_create(self.container_id, argv, workdir=cwd, environment=env)["Id"]
            self.api.exec_start(exec_id, detach=True)
        except (DockerException, requests.RequestException) as exc:
            raise SandboxError(
                f"cannot exec in container {self.container_id[:12]}: {exc}; "
                "is it still running? (`docker ps`)"
            ) from exc
        return exec_id

    def inspect(self, exec_id: str) -> dict[str, Any]:
        info: dict[str, Any] = self.api.exec_inspect(exec_id)
        return info

    def running(self, exec_id: str) -> bool:
        return bool(self.inspect(exec_id)["Running"])

    def _wait(self, exec_id: str, deadline: float) -> bool:
        """Poll until the exec ends (True) or the deadline passes (False)."""
        interval = 0.01
        while time.monotonic() < deadline:
            if not self.running(exec_id):
                return True
            time.sleep(interval)
            interval = min(interval * 1.5, 0.2)
        return not self.running(exec_id)

    def signal_group(self, pid_file: Path, sig: str) -> None:
        """Send `sig` to the process group whose leader's pid is in pid_file (no-op when it never started)."""
        pid = group_leader(pid_file)
        if pid is None:
            return
        exec_id = self._start(["sh", "-c", f"kill -s {sig} -- -{pid} 2>/dev/null"], "/", {})
        self._wait(exec_id, time.monotonic() + 10)

    def end_group(self, pid_file: Path, grace_s: float) -> None:
        """TERM the process group whose leader's pid is in pid_file, KILL what is left once the leader
        ended or grace_s passed: one exec (a TERM exec, polls from the host, then a KILL exec took ~0.2 s
        for a service that stops at once; this takes one exec's time)."""
        pid = group_leader(pid_file)
        if pid is None:
            return
        ticks = str(max(0, round(grace_s / 0.05)))
        self._wait(
            self._start(["sh", "-c", _END_GROUP, "rocport", str(pid), ticks], "/", {}),
            time.monotonic() + grace_s + 10,
        )

    def wait(self, exec_id: str, timeout: float) -> bool:
        """Whether the exec ended within timeout seconds."""
        return self._wait(exec_id, time.monotonic() + timeout)

    def run(self, cmd: str, *, cwd: str, env: dict[str, str], timeout: float) -> CommandResult:
        """Run `cmd` with bash; a result even on failure or timeout."""
        number = next(self._ids)
        prefix = self.logdir / f".run-{number}"
        marker = f"{self.container_id[:12]}-{number}"
        started = time.monotonic()
        exec_id = self._start(
            ["sh", "-c", _RUN, "rocport", f"{timeout:.3f}", cmd, str(prefix)],
            cwd,
            {**env, "ROCPORT_COMMAND": marker},
        )
        finished = self._wait(exec_id, started + timeout + GRACE_S + HOST_SLACK_S)
        if not finished:
            self.signal_group(Path(f"{prefix}.pid"), "KILL")
            self._wait(exec_id, time.monotonic() + 10)
        elapsed = time.monotonic() - started
        code = self.inspect(exec_id).get("ExitCode")
        timed_out = not finished or (code in (124, 137) and elapsed >= timeout)
        if timed_out:  # what left the process group (setsid, daemons) ends too
            self._wait(
                self._start(["sh", "-c", _KILL_MARKED, "rocport", marker], "/", {}), time.monotonic() + 30
            )
        result = CommandResult(
            cmd=cmd,
            returncode=124 if timed_out else (code if code is not None else -1),
            stdout=self._collect(Path(f"{prefix}.out")),
            stderr=self._collect(Path(f"{prefix}.err")),
            duration_s=elapsed,
            timed_out=timed_out,
        )
        Path(f"{prefix}.pid").unlink(missing_ok=True)
        return result

    @staticmethod
    def _collect(path: Path) -> str:
        if not path.exists():
            return ""
        text = _read_capped(path)
        path.unlink()
        return text

    def spawn(self, cmd: str, *, cwd: str, env: dict[str, str], log_path: Path) -> tuple[str, Path]:
        """Start `cmd` in the background with its output appended to log_path."""
        pid_file = self.logdir / f".{log_path.stem}-{next(self._ids)}.pid"
        exec_id = self._start(["sh", "-c", _SPAWN, "rocport", cmd, str(log_path), str(pid_file)], cwd, env)
        deadline = time.monotonic() + 10
        while not pid_file.exists() and time.monotonic() < deadline:
            time.sleep(0.01)  # the pid file is how stop() finds the group
        return exec_id, pid_file


def group_leader(pid_file: Path) -> int | None:
    """The pid of a process group's leader from its pid file; None when it never started."""
    try:
        return int(pid_file.read_text().strip())
    except (OSError, ValueError):
        return None
