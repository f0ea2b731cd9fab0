"""DockerSandbox: one container per job, one exec per command, the repo bind-mounted at its host path.

Command output goes to files in a bind-mounted log folder, so the host reads it with the same
head-and-tail cap as LocalSandbox and never holds a long-lived stream open to the daemon.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shlex
import shutil
import tempfile
import uuid
import weakref
from pathlib import Path

import docker
from docker.errors import APIError, ImageNotFound, NotFound
from docker.models.containers import Container

from sandboxes.base import CommandResult, SandboxError
from sandboxes.docker_exec import ExecRunner
from sandboxes.docker_options import check_workdir, connect, gpu_options, network_mode, parse_mount
from sandboxes.docker_service import DockerService, wait_inside
from sandboxes.health import wait_ready
from sandboxes.heartbeat import keepalive_argv, start_heartbeat, stop_heartbeat
from sandboxes.local import ServiceNotReady
from sandboxes.orphans import LABEL_OWNER, LABEL_SESSION, owner_labels
from sandboxes.relay import RELAY_IN_CONTAINER, HostListener

_OPEN: weakref.WeakSet[DockerSandbox] = weakref.WeakSet()


class Published:
    """A container port reachable at 127.0.0.1:port on the host (see sandboxes/relay.py); close() ends it."""

    def __init__(self, listener: HostListener | None = None, relay: DockerService | None = None):
        self._listener = listener
        self._relay = relay

    def close(self) -> None:
        if self._listener is not None:
            self._listener.close()
        if self._relay is not None:
            # the container is already gone: so is the relay
            with contextlib.suppress(SandboxError):
                self._relay.stop(grace_s=1)

    def __enter__(self) -> Published:  # noqa: PYI034
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class DockerSandbox:
    """Runs commands in a fresh container of `image`, with `workdir` mounted at the same path.

    No network unless `network=True`: builds and the LLM's edits cannot reach anything; a server is
    reached through `publish(port)`, a loopback port on the host."""

    def __init__(
        self,
        image: str,
        workdir: str | os.PathLike[str],
        *,
        network: bool = False,
        env: dict[str, str] | None = None,
        mem_limit: str = "16g",
        cpus: float | None = None,
        pids_limit: int = 8192,
        mounts: list[str] | None = None,
        logdir: str | os.PathLike[str] | None = None,
    ):
        path = check_workdir(workdir)
        self.workdir = str(path)
        self.image = image
        self.network = network
        self.base_env = dict(env or {})
        self.session = uuid.uuid4().hex[:12]
        self._services: list[DockerService] = []
        self.client = connect()
        try:
            self.client.images.get(image)
        except ImageNotFound:
            raise SandboxError(
                f"image {image} is not present locally: run `rocport image build` for the "
                f"rocport/rocm-build images, or `docker pull {image}`"
            ) from None
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        if logdir:
            self.logdir = Path(logdir).resolve()
        else:
            self._tmp = tempfile.TemporaryDirectory(prefix="rocport-docker-")
            self.logdir = Path(self._tmp.name)
        self.logdir.mkdir(parents=True, exist_ok=True)
        # PID 1 only waits and reaps; it exits when this process stops beating (killed), ending the container
        self.heartbeat = start_heartbeat(self.logdir / f".heartbeat-{self.session}")
        self._relay_dir = tempfile.mkdtemp(prefix="rp-")  # short: unix socket paths are capped at 108 bytes
        self.container = self._create(path, mem_limit, cpus, pids_limit, mounts or [])
        self._exec = ExecRunner(self.client, self.container.id or self.container.name or "", self.logdir)
        _OPEN.add(self)

    def _create(
        self, path: Path, mem_limit: str, cpus: float | None, pids_limit: int, mounts: list[str]
    ) -> Container:
        binds = [
            docker.types.Mount(str(path), str(path), type="bind"),
            docker.types.Mount(str(self.logdir), str(self.logdir), type="bind"),
            docker.types.Mount(self._relay_dir, self._relay_dir, type="bind"),
        ]
        if (path / ".git").is_dir():  # the clone's git config and hooks run on the host: read-only in here
            binds.append(
                docker.types.Mount(str(path / ".git"), str(path / ".git"), type="bind", read_only=True)
            )
        self.network_mode = network_mode(self.client, self.network)
        binds += [parse_mount(m) for m in mounts]
        options = dict(
            network_mode=self.network_mode,
            mem_limit=mem_limit,
            pids_limit=pids_limit,
            labels=owner_labels(self.session, self.workdir),
            working_dir=self.workdir,
            environment=self.base_env,
            mounts=binds,
            name=f"rocport-{self.session}",
            detach=True,
            **gpu_options(),
        )
        if cpus:
            options["nano_cpus"] = int(cpus * 1e9)
        try:
            # detach=True (in options) makes run() return the Container, which the stubs cannot see
            container: Container = self.client.containers.run(
                self.image, keepalive_argv(self.heartbeat), **options
            )
            return container
        except APIError as exc:
            stop_heartbeat(self.heartbeat)
            self._cleanup_tmp()
            raise SandboxError(
                f"cannot start a container from {self.image}: {exc.explanation or exc}"
            ) from exc

    def _env(self, env: dict[str, str] | None) -> dict[str, str]:
        return {**self.base_env, **(env or {})}

    def _cwd(self, cwd: str | None) -> str:
        return self.workdir if cwd is None else str(Path(self.workdir, cwd))

    def run(
        self, cmd: str, *, cwd: str | None = None, env: dict[str, str] | None = None, timeout: float = 600
    ) -> CommandResult:
        """Run `cmd` with bash in the container; on timeout its process group is killed, output kept."""
        return self._exec.run(cmd, cwd=self._cwd(cwd), env=self._env(env), timeout=timeout)

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
    ) -> DockerService:
        """Start a background process in the container; when `port` is given, wait until it answers."""
        log_path = self.logdir / f"{name}.log"
        exec_id, pid_file = self._exec.spawn(cmd, cwd=self._cwd(cwd), env=self._env(env), log_path=log_path)
        service = DockerService(name, port, self._exec, exec_id, pid_file, log_path)
        self._services.append(service)
        if port is not None:
            if self.network_mode == "host":  # the port is on this machine's 127.0.0.1
                problem = wait_ready(
                    port, health_path=health_path, timeout=ready_timeout, alive=service.alive
                )
            else:
                problem = wait_inside(self._exec, service, port, health_path, ready_timeout)
            if problem:
                service.stop(grace_s=2)
                last = service.last_line()
                raise ServiceNotReady(
                    f"{name} ({shlex.split(cmd)[0]}) {problem}{': ' + last if last else ''}; see {log_path}",
                    service.logs(),
                )
        return service

    def publish(self, port: int) -> Published:
        """Make the container's 127.0.0.1:port answer at the host's 127.0.0.1:port (a relay, no network)."""
        if self.network_mode == "host":
            return Published()  # already the host's own port
        sock = Path(self._relay_dir, f"{port}.sock")
        exec_id, pid_file = self._exec.spawn(
            f"exec python3 -c {shlex.quote(RELAY_IN_CONTAINER)} {sock} {port}",
            cwd="/",
            env={},
            log_path=self.logdir / f"relay-{port}.log",
        )
        relay = DockerService(
            f"relay-{port}", None, self._exec, exec_id, pid_file, self.logdir / f"relay-{port}.log"
        )
        try:
            listener = HostListener(port, sock)
        except OSError as exc:
            relay.stop(grace_s=1)
            raise SandboxError(
                f"cannot publish port {port} on 127.0.0.1 ({exc.strerror}): pick a free port"
            ) from exc
        return Published(listener, relay)

    def read_file(self, path: str) -> str:
        return Path(self.workdir, path).read_text(encoding="utf-8", errors="replace")

    def write_file(self, path: str, text: str) -> None:
        target = Path(self.workdir, path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")

    def _cleanup_tmp(self) -> None:
        shutil.rmtree(self._relay_dir, ignore_errors=True)
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def close(self) -> None:
        """Stop services and remove the container; safe to call twice."""
        for service in self._services:
            # the container is already gone or dying; removing it below ends the service too
            with contextlib.suppress(SandboxError):
                service.stop(grace_s=5)
        self._services.clear()
        # already gone: closing twice, or removed by orphan cleanup
        with contextlib.suppress(NotFound):
            self.container.remove(force=True)
        _OPEN.discard(self)
        stop_heartbeat(self.heartbeat)
        self._cleanup_tmp()

    def __enter__(self) -> DockerSandbox:  # noqa: PYI034
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@atexit.register
def _close_open_sandboxes() -> None:
    """A process that forgot close() still leaves no container behind (kill -9 is cleaned on next start)."""
    for sandbox in list(_OPEN):
        sandbox.close()


__all__ = ["LABEL_OWNER", "LABEL_SESSION", "DockerSandbox", "connect", "gpu_options"]
