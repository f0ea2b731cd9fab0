"""A background process inside a DockerSandbox container, and its readiness check from inside."""

from __future__ import annotations

import shlex
from pathlib import Path

from sandboxes.docker_exec import ExecRunner, group_leader
from sandboxes.local import _read_capped

# Runs inside the container when it has no network the host could reach: stdlib only.
_PROBE = """
import os, socket, sys, time, urllib.request
port, path, timeout, pid = int(sys.argv[1]), sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
deadline = time.monotonic() + timeout
while time.monotonic() < deadline:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        sys.exit(3)
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        if not path or urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2).status == 200:
            sys.exit(0)
    except OSError:
        pass  # not listening yet, or the health path is not 200 yet
    time.sleep(0.1)
sys.exit(4)
"""


class DockerService:
    """A process started by `DockerSandbox.start`; its output is in `log_path` on the host."""

    def __init__(
        self, name: str, port: int | None, runner: ExecRunner, exec_id: str, pid_file: Path, log_path: Path
    ):
        self.name = name
        self.port = port
        self.log_path = log_path
        self._runner = runner
        self._exec_id = exec_id
        self._pid_file = pid_file

    def pid(self) -> int | None:
        """The pid of the service's process group leader inside the container."""
        return group_leader(self._pid_file)

    def alive(self) -> bool:
        return self._runner.running(self._exec_id)

    def logs(self) -> str:
        return _read_capped(self.log_path) if self.log_path.exists() else ""

    def last_line(self) -> str:
        """The last non-empty line of the log: usually why a service died."""
        lines = [ln for ln in self.logs().splitlines() if ln.strip()]
        return lines[-1].strip() if lines else ""

    def stop(self, grace_s: float = 10.0) -> int | None:
        """TERM the service's process group, KILL it after grace_s; returns the exit code when known."""
        if self.alive():
            self._runner.end_group(self._pid_file, grace_s)
            self._runner.wait(self._exec_id, 5)  # its shell exits once it has reaped the leader
        else:  # even a leader that exited may have left children in its group
            self._runner.signal_group(self._pid_file, "KILL")
        self._pid_file.unlink(missing_ok=True)
        return self._runner.inspect(self._exec_id).get("ExitCode")


def wait_inside(
    runner: ExecRunner, service: DockerService, port: int, health_path: str | None, timeout: float
) -> str | None:
    """Wait for the service from inside its container. None when ready, else why it is not."""
    pid = service.pid()
    if pid is None:
        return "did not start (no pid recorded)"
    result = runner.run(
        f"python3 -c {shlex.quote(_PROBE)} {port} {shlex.quote(health_path or '')} {timeout} {pid}",
        cwd="/",
        env={},
        timeout=timeout + 5,
    )
    if result.returncode == 0:
        return None
    if result.returncode == 3:
        return "exited before it became ready"
    if result.returncode == 127:
        return "cannot be checked: the image has no python3 for the readiness probe (pass network=True)"
    what = f"http://127.0.0.1:{port}{health_path or ''} inside the container"
    return f"not ready after {timeout:.0f}s ({what} did not answer)"
