"""RunEnv: the live handles nodes need (sandbox, proposers, observer), kept OUT of graph state.

A node is `node(state, env) -> dict`; graph.py binds env. Everything here is rebuilt on resume
from the run directory's job.yaml, so nothing live is ever checkpointed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.config import PortJob
from agent.loop.observer import Observer
from agent.loop.phases import PhaseClock
from agent.loop.rundir import RunDir
from agent.loop.store import RunStore
from agent.profiles import Profile
from agent.proposers.base import Proposer
from sandboxes.base import CommandResult, Sandbox


def has_gpu() -> bool:
    """An AMD GPU is usable here when the kernel driver's device exists."""
    return Path("/dev/kfd").exists()


def job_image(job: PortJob, profile: Profile) -> str:
    """The build image of a job: its own, else the profile's first, else rocport's 6.4 image."""
    if job.target.image:
        return job.target.image
    if profile.images:
        return profile.images[0]
    return "rocport/rocm-build:6.4"


@dataclass
class RunEnv:
    """What one process of a run holds: the job, its profile, the run dir, live handles."""

    job: PortJob
    profile: Profile
    rundir: RunDir
    observer: Observer
    proposers: list[Proposer]
    """Rules first, then the LLM when one is configured."""
    store: RunStore | None = None
    review: bool = False
    """Pause (LangGraph interrupt) before applying any LLM patch."""
    gpu: bool = field(default_factory=has_gpu)
    mark: float = field(default_factory=time.monotonic)
    """When the current node started (wall-time accounting across resumes)."""
    _sandbox: Sandbox | None = None
    server: Any = None
    """The model server started by the serve node, stopped by report (a live handle, never state)."""
    clock: PhaseClock = field(default_factory=PhaseClock)
    """Wall seconds per phase (agent.loop.phases), emitted as `timing` events after each node."""
    _compilers: Any = None
    """The run's warm compile services (agent.loop.compilers.Compilers), started on first use."""
    repo: Path | None = None
    """The clone the sandbox works in when it is not the run's own (a run on another run's build)."""

    @property
    def arch(self) -> str:
        return self.job.target.arch

    @property
    def clone(self) -> Path:
        """The framework clone this run builds, loads and serves: its own, or the build's it runs on."""
        return self.repo or self.rundir.repo

    def image(self) -> str:
        return job_image(self.job, self.profile)

    def sandbox(self) -> Sandbox:
        """The run's sandbox (every command it runs is logged in the run dir), created on first use."""
        return LoggedSandbox(self._raw_sandbox(), self.rundir, self.observer)

    def _raw_sandbox(self) -> Sandbox:
        """One sandbox over the repo clone per process of the run (one container per run)."""
        if self._sandbox is None:
            workdir = str(self.clone)
            env = self.profile_env()
            if self.job.sandbox.backend == "local":
                from sandboxes.local import LocalSandbox

                self._sandbox = LocalSandbox(workdir, env=env, logdir=self.rundir.logs)
            else:
                from sandboxes.docker import DockerSandbox

                # no network unless the job asks: the server is reached through a published loopback port
                network = self.job.sandbox.network
                model = self.job.model.path
                mounts = [f"{Path(model).resolve()}:{Path(model).resolve()}:ro"] if model else []
                self._sandbox = DockerSandbox(
                    self.image(), workdir, network=network, env=env, logdir=self.rundir.logs, mounts=mounts
                )
        return self._sandbox

    def profile_env(self) -> dict[str, str]:
        return {k: v.replace("{arch}", self.arch) for k, v in self.profile.env.items()}

    def run(self, what: str, cmd: str, *, timeout: float = 600) -> tuple[CommandResult, Path]:
        """Run a command in the sandbox and keep its full log in the run dir."""
        self.observer.emit("command", what=what, cmd=cmd)
        result = self._raw_sandbox().run(cmd, timeout=timeout)
        return result, self.rundir.log_command(what, result)

    def compilers(self) -> Any:
        """The run's warm compile services: hipcc in the run's sandbox, nvcc on the host (when present)."""
        if self._compilers is None:
            from agent.loop.compilers import Compilers, shared_cache_dir

            spec = self.job.sandbox
            shared = shared_cache_dir(spec.compile_cache, spec.backend, self.image())
            self._compilers = Compilers.start(
                self._raw_sandbox(), self.clone, self.observer, self.rundir, shared
            )
        return self._compilers

    def close(self) -> None:
        if self._sandbox is not None:
            from agent.loop.phases import container_cpu_s

            cpu = container_cpu_s(self._sandbox)
            if cpu is not None:
                self.observer.emit("sandbox_cpu", seconds=round(cpu, 2))
        if self._compilers is not None:
            self.observer.emit("compile_cache", **self._compilers.stats())
            self._compilers.close(publish=not self.rundir.llm_consulted())
            self._compilers = None
        if self.server is not None:
            self.server.stop()
            self.server = None
        if self._sandbox is not None:
            self._sandbox.close()
            self._sandbox = None


class LoggedSandbox:
    """A sandbox whose every `run` leaves its command, exit code and output in the run dir's logs/
    (commands other areas run for the loop, such as the validator's unit compiles, included)."""

    def __init__(self, inner: Sandbox, rundir: RunDir, observer: Observer | None = None):
        self._inner = inner
        self._rundir = rundir
        self._observer = observer

    def run(self, cmd: str, **kwargs: Any) -> CommandResult:
        if self._observer is not None:  # what a person watching sees as "the current command"
            self._observer.emit("command", cmd=cmd)
        result = self._inner.run(cmd, **kwargs)
        words = [w for w in cmd.split() if not w.startswith("-")]
        self._rundir.log_command(
            "-".join(words[:1] + [Path(w).name for w in words[1:] if "/" in w][:1]), result
        )
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)
