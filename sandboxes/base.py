"""The Sandbox protocol: where every build, compile and server launch runs."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Protocol, Self, runtime_checkable

# Logs of a framework build can be hundreds of MB; keep both ends, where errors and summaries live.
OUTPUT_LIMIT = 2_000_000
HEAD_KEEP = 200_000


class SandboxError(Exception):
    """A sandbox could not be created or used; the message says what to do."""


@dataclass
class CommandResult:
    """What a command did. A failed command is a result, not an exception."""

    cmd: str
    returncode: int
    stdout: str
    stderr: str
    duration_s: float
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    @property
    def output(self) -> str:
        """stdout and stderr together, as a user would read them in a terminal."""
        if self.stdout and self.stderr:
            return self.stdout.rstrip("\n") + "\n" + self.stderr
        return self.stdout or self.stderr

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def truncate_middle(text: str, limit: int = OUTPUT_LIMIT, head: int = HEAD_KEEP) -> str:
    """Keep the head and the tail of a huge output, with a marker saying how much was cut."""
    if len(text) <= limit:
        return text
    tail = limit - head
    cut = len(text) - head - tail
    return f"{text[:head]}\n[... {cut} characters cut by rocport ...]\n{text[-tail:]}"


@runtime_checkable
class Service(Protocol):
    """A background process started by a sandbox (a model server)."""

    name: str
    port: int | None

    def alive(self) -> bool: ...

    def logs(self) -> str: ...

    def stop(self, grace_s: float = 10.0) -> int | None:
        """SIGTERM, then SIGKILL after grace_s; returns the exit code when known."""
        ...


@runtime_checkable
class Sandbox(Protocol):
    """Runs commands against one repo checkout. Context manager; `close()` frees everything."""

    workdir: str
    """Path of the repo as commands inside the sandbox see it."""

    def run(
        self, cmd: str, *, cwd: str | None = None, env: dict[str, str] | None = None, timeout: float = 600
    ) -> CommandResult: ...

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
    ) -> Service: ...

    def read_file(self, path: str) -> str: ...

    def write_file(self, path: str, text: str) -> None: ...

    def close(self) -> None: ...

    def __enter__(self) -> Self: ...

    def __exit__(self, *exc: object) -> None: ...
