"""LocalSandbox: commands as host subprocesses, each in its own process group."""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import uuid
import weakref
from pathlib import Path
from typing import Self

from sandboxes.base import HEAD_KEEP, OUTPUT_LIMIT, CommandResult, SandboxError
from sandboxes.environ import sandbox_environ
from sandboxes.health import wait_ready
from sandboxes.watchdog import kill_marked, process_start

HOST_PYTHON = f"{shlex.quote(sys.executable)} -S"
"""How rocport's own helper scripts (the compile service and its compiler shims, stdlib only) run on this
machine: the interpreter running rocport, without site-packages. Not `python3` from PATH, which may be a
version manager's shim (pyenv: ~10 shell processes and ~75 ms of CPU before Python starts) or another
Python altogether; a build compiles through a shim once per unit."""


def _read_capped(path: Path, limit: int = OUTPUT_LIMIT, head: int = HEAD_KEEP) -> str:
    """Read a captured stream, keeping head and tail when huge, without loading all of it."""
    size = path.stat().st_size
    with path.open("rb") as fh:
        if size <= limit:
            return fh.read().decode("utf-8", "replace")
        first = fh.read(head)
        fh.seek(size - (limit - head))
        last = fh.read()
    cut = size - len(first) - len(last)
    return (
        first.decode("utf-8", "replace")
        + f"\n[... {cut} bytes cut by rocport ...]\n"
        + last.decode("utf-8", "replace")
    )


def _kill_group(proc: subprocess.Popen[bytes], grace_s: float) -> None:
    """SIGTERM the whole process group, SIGKILL it after grace_s."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=grace_s)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)  # grandchildren may outlive the leader
    proc.wait()


def _stop(watchdog: subprocess.Popen[bytes]) -> None:
    """End a sandbox's watchdog (its sandbox closed or was dropped): nothing of it is left to guard."""
    watchdog.terminate()
    watchdog.wait()


class LocalService:
    """A background process on the host with its output in a log file."""

    def __init__(self, name: str, proc: subprocess.Popen[bytes], log_path: Path, port: int | None):
        self.name = name
        self.port = port
        self.log_path = log_path
        self._proc = proc

    @property
    def pid(self) -> int:
        return self._proc.pid

    def alive(self) -> bool:
        return self._proc.poll() is None

    def logs(self) -> str:
        return _read_capped(self.log_path) if self.log_path.exists() else ""

    def stop(self, grace_s: float = 10.0) -> int | None:
        if self._proc.poll() is None:
            _kill_group(self._proc, grace_s)
        else:
            # the leader is gone; make sure nothing it spawned is left behind
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._proc.pid, signal.SIGKILL)
        return self._proc.returncode


class LocalSandbox:
    """Runs commands on this machine in `workdir`. Use for trusted commands only."""

    helper_python = HOST_PYTHON
    """The interpreter command rocport's helper scripts run with here (a container's is `python3`)."""

    def __init__(
        self,
        workdir: str | os.PathLike[str],
        *,
        env: dict[str, str] | None = None,
        logdir: str | os.PathLike[str] | None = None,
    ):
        path = Path(workdir).resolve()
        if not path.is_dir():
            raise SandboxError(f"workdir {path} does not exist: create it or pass an existing repo checkout")
        self.workdir = str(path)
        self._tmp = tempfile.TemporaryDirectory(prefix="rocport-local-")
        # the commands' own temporary files go with the sandbox: ROCm 5.2's hipcc leaves two empty
        # folders in $TMPDIR per compile, thousands over a day of builds on a shared /tmp
        scratch = Path(self._tmp.name, "tmp")
        scratch.mkdir()
        self.base_env = {**sandbox_environ(), "TMPDIR": str(scratch), **(env or {})}
        self.logdir = Path(logdir) if logdir else Path(self._tmp.name)
        self.logdir.mkdir(parents=True, exist_ok=True)
        self._services: list[LocalService] = []
        self.session = uuid.uuid4().hex[:12]
        self._commands = 0
        self._watchdog: subprocess.Popen[bytes] | None = None

    def _env(self, env: dict[str, str] | None) -> dict[str, str]:
        """The command's environment, marked with this sandbox's session and a per-command id (what the
        watchdog and the timeout kill look for: markers survive setsid, process groups do not)."""
        merged = dict(self.base_env)
        merged.update(env or {})
        self._commands += 1
        merged["ROCPORT_SANDBOX"] = self.session
        merged["ROCPORT_COMMAND"] = f"{self.session}-{self._commands}"
        self._watch()
        return merged

    def _watch(self) -> None:
        """Start the watchdog that ends this sandbox's processes if this process dies (kill -9 too)."""
        if self._watchdog is not None:
            return
        me = os.getpid()
        self._watchdog = subprocess.Popen(
            [
                *shlex.split(HOST_PYTHON),  # stdlib only, as the other helpers: no site-packages to set up
                str(Path(__file__).with_name("watchdog.py")),
                str(me),
                process_start(me),
                self.session,
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            env={"PATH": os.environ.get("PATH", "")},
        )
        # a sandbox dropped without close() must not leave its watchdog waiting for the whole process
        self._stop_watchdog = weakref.finalize(self, _stop, self._watchdog)

    def _cwd(self, cwd: str | None) -> str:
        if cwd is None:
            return self.workdir
        return str(Path(self.workdir, cwd))

    def run(
        self, cmd: str, *, cwd: str | None = None, env: dict[str, str] | None = None, timeout: float = 600
    ) -> CommandResult:
        """Run `cmd` through bash; on timeout the whole process group is killed, output kept.

        Output goes to `.run-*.out/.err` in the log dir while the command runs (as in DockerSandbox),
        so a person watching the run sees the command's latest line, then those files are removed."""
        out_path = self.logdir / f".run-{self.session}-{time.monotonic_ns()}"
        start = time.monotonic()
        with open(f"{out_path}.out", "wb") as out, open(f"{out_path}.err", "wb") as err:
            environ = self._env(env)
            try:
                proc = subprocess.Popen(
                    ["bash", "-c", cmd],
                    cwd=self._cwd(cwd),
                    env=environ,
                    stdout=out,
                    stderr=err,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                )
            except OSError as exc:
                raise SandboxError(f"cannot run commands in {self._cwd(cwd)}: {exc}") from exc
            timed_out = False
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
                _kill_group(proc, grace_s=2.0)
                kill_marked(f"ROCPORT_COMMAND={environ['ROCPORT_COMMAND']}", grace_s=2.0)  # setsid escapees
            else:
                # a finished command must not leave background children running
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
        result = CommandResult(
            cmd=cmd,
            returncode=proc.returncode if not timed_out else 124,
            stdout=_read_capped(Path(f"{out_path}.out")),
            stderr=_read_capped(Path(f"{out_path}.err")),
            duration_s=time.monotonic() - start,
            timed_out=timed_out,
        )
        for suffix in (".out", ".err"):
            Path(f"{out_path}{suffix}").unlink(missing_ok=True)
        return result

    def start(
        self,
        cmd: str,
        *,
        name: str = "service",
        port: int | None = None,
        health_path: str | None = None,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        ready_timeout: float = 120,
    ) -> LocalService:
        """Start a background process; when `port` is given, wait until it answers."""
        log_path = self.logdir / f"{name}.log"
        with open(log_path, "ab") as log:  # the child keeps its own descriptor
            proc = subprocess.Popen(
                ["bash", "-c", f"exec {cmd}"],
                cwd=self._cwd(cwd),
                env=self._env(env),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        service = LocalService(name, proc, log_path, port)
        self._services.append(service)
        if port is not None:
            problem = wait_ready(port, health_path=health_path, timeout=ready_timeout, alive=service.alive)
            if problem:
                service.stop(grace_s=2)
                raise ServiceNotReady(
                    f"{name} ({shlex.split(cmd)[0]}) {problem}; see {log_path}", service.logs()
                )
        return service

    def read_file(self, path: str) -> str:
        return Path(self.workdir, path).read_text(encoding="utf-8", errors="replace")

    def write_file(self, path: str, text: str) -> None:
        target = Path(self.workdir, path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")

    def close(self) -> None:
        for service in self._services:
            service.stop(grace_s=5)
        self._services.clear()
        if self._watchdog is not None:
            self._stop_watchdog()
            self._watchdog = None
        self._tmp.cleanup()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ServiceNotReady(SandboxError):
    """A background service exited or never answered; `log` holds what it printed."""

    def __init__(self, message: str, log: str):
        super().__init__(message)
        self.log = log
