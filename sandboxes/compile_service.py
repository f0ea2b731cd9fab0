"""The warm compile service: one long-lived process inside a run's sandbox that compiles on request.

A unit compile used to be a `docker exec` of its own (a shell, `timeout`, the exec round trips); now
the host writes a request file into a folder both sides see and the service answers it, running up to
one compile per core at once. Compiles go through a cache keyed by the preprocessed input (see
compile_cache.py), which full builds share through a compiler shim on PATH (`build_prefix`), so the
build after a wave reuses every object a unit check already produced. The service is started with the
sandbox's own `start`, so it runs with the sandbox's environment allow-list, in its container, and ends
with it.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shlex
import shutil
import time
import uuid
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sandboxes import compile_share
from sandboxes.base import CommandResult, Sandbox, SandboxError, Service
from sandboxes.compile_deps import CANCEL_WARMUPS, PROMOTE_WARMUPS

WORKER = Path(__file__).with_name("compile_worker.py")
SHIPPED = ("compile_cache.py", "compile_deps.py", "compile_lines.py")
"""What the worker imports, copied to SPOOL/sandboxes/ (its own package there, shadowing any other)."""
SHIMMED = ("hipcc", "nvcc")
"""Compilers a build finds on PATH through the cache (others, and links, run as they are)."""
POLL_S = 0.02
ALIVE_S = 0.25
"""How often a wait asks whether the service still runs: in a container that is a Docker API call, which
at every poll would cost the daemon and this process a request 50 times a second during a compile."""


@dataclass
class CompileStats:
    """What the service did: requests, compiles answered from the cache, seconds spent waiting."""

    requests: int = 0
    cache_hits: int = 0
    wait_s: float = 0.0


class CompileService:
    """A started service; `run_many` compiles in parallel, `run` one command, `close` ends it."""

    def __init__(self, sandbox: Sandbox, spool: Path, service: Service, python: str):
        self.sandbox = sandbox
        self.spool = spool
        self.service = service
        self.python = python
        self.stats = CompileStats()
        self._ids = itertools.count(1)
        self._finalizer = weakref.finalize(self, _end, spool, service)
        self.on_result: Callable[[CommandResult, str], None] | None = None
        """Hears of every answer and how the cache served it (the run dir's logs)."""

    @classmethod
    def start(
        cls,
        sandbox: Sandbox,
        *,
        python: str | None = None,
        ready_timeout: float = 60,
        shared: Path | None = None,
    ) -> CompileService:
        """Start the service in `sandbox` (its log folder is the spool both sides see); SandboxError-free:
        raises RuntimeError saying why when it cannot start (callers fall back to one exec per unit).
        `shared`: a cache other runs left (sandboxes/compile_share.py), copied in first. `python`: the
        interpreter command inside the sandbox (default: the sandbox's `helper_python`, else `python3`)."""
        python = python or str(getattr(sandbox, "helper_python", "python3"))
        logdir = getattr(sandbox, "logdir", None)
        if logdir is None:
            raise RuntimeError("the sandbox has no shared log folder for the compile service's spool")
        spool = Path(logdir) / f".compile-{uuid.uuid4().hex[:8]}"
        write_spool(spool, python)
        if shared is not None:
            compile_share.seed(shared, spool / "cache")
        service = sandbox.start(
            f"{python} {shlex.quote(str(spool / 'compile_worker.py'))} serve {shlex.quote(str(spool))}",
            name="compile-service",
        )
        deadline = time.monotonic() + ready_timeout
        while not (spool / "ready").exists():
            if not service.alive() or time.monotonic() > deadline:
                last = service.logs().strip().splitlines()[-1:] or ["no output"]
                service.stop(grace_s=1)
                raise RuntimeError(f"the compile service did not start ({last[0][:200]})")
            time.sleep(POLL_S)
        return cls(sandbox, spool, service, python)

    @property
    def cache_dir(self) -> Path:
        return self.spool / "cache"

    def build_prefix(self) -> str:
        """Shell words that put the cached compilers first for a whole command line (a full build): on
        PATH, and in HIPCC/NVCC where the image names its compiler there (that one stays the real one)."""
        return _sourcing(self.spool / "env.sh")

    def alive(self) -> bool:
        return self.service.alive()

    def submit(
        self,
        cmd: str,
        *,
        env: dict[str, str] | None = None,
        timeout: float = 600,
        mode: str = "",
        unit: str | None = None,
    ) -> str:
        """Queue one command; returns the request id to `wait` on. `mode`: "" keys a compile by its
        preprocessed input first (unit checks); "depend" compiles a miss at once and records its -MD
        dependencies, as a build does; "index" compiles nothing: it gives a build's stored clean compile
        of `cmd` a preprocessed key too (see compile_cache.index_compile); "warmup" compiles as "depend"
        does, at the lowest priority, for a build to reuse later (nobody waits for its answer); `unit`
        names its source, so that cancel_warmups can drop it."""
        rid = f"{os.getpid()}-{next(self._ids):06d}" + ("-warmup" if mode == "warmup" else "")
        request = {
            "cmd": cmd,
            "cwd": self.sandbox.workdir,
            "env": env or {},
            "timeout": timeout,
            "mode": mode,
            "unit": unit,
        }
        tmp = self.spool / "req" / f".{rid}.tmp"
        tmp.write_text(json.dumps(request))
        tmp.rename(self.spool / "req" / f"{rid}.json")
        self.stats.requests += 1
        return rid

    def cancel_warmups(self, units: list[str] | None = None) -> None:
        """Drop the warm-ups asked so far (of `units` only, when given: a patch is about to change what
        they read): those not started never run, those running are killed."""
        if units is not None and not units:
            return
        name = CANCEL_WARMUPS if units is None else f"{CANCEL_WARMUPS}-{next(self._ids):06d}"
        with contextlib.suppress(OSError):
            tmp = self.spool / f".{name}.tmp"
            tmp.write_text(json.dumps(units or []))
            tmp.rename(self.spool / name)

    def promote_warmups(self) -> None:
        """A build starts: the warm-ups not started are dropped (it compiles those units itself, at full
        priority), those running finish and the build's own compile of their unit waits for them."""
        with contextlib.suppress(OSError):
            (self.spool / PROMOTE_WARMUPS).write_text("")

    def wait(self, rid: str, cmd: str, timeout: float, *, quiet: bool = False) -> CommandResult:
        """The answer to one request; a timed-out result when the service died or never answered.
        `quiet`: the caller logs it itself (`on_result` is not told)."""
        path = self.spool / "res" / f"{rid}.json"
        started = time.monotonic()
        deadline = started + timeout + 30  # the worker enforces `timeout`; this is the service's own
        checked = started  # whether the service still runs is asked every ALIVE_S, not every poll
        while not path.exists():
            now = time.monotonic()
            if now > deadline or (now - checked >= ALIVE_S and not self.service.alive()):
                self.stats.wait_s += now - started
                why = "the compile service died" if not self.service.alive() else "no answer in time"
                return CommandResult(cmd, 124, "", f"rocport: {why}\n", now - started, True)
            checked = checked if now - checked < ALIVE_S else now
            time.sleep(POLL_S)
        answer: dict[str, Any] = json.loads(path.read_text())
        path.unlink()
        self.stats.wait_s += time.monotonic() - started
        self.stats.cache_hits += bool(answer.get("cached"))
        result = CommandResult(
            cmd=cmd,
            returncode=answer["returncode"],
            stdout=answer["stdout"],
            stderr=answer["stderr"],
            duration_s=answer["duration_s"],
            timed_out=answer["timed_out"],
        )
        if self.on_result is not None and not quiet:
            self.on_result(result, answer.get("cached") or "")
        return result

    def run_many(
        self, cmds: list[str], *, env: dict[str, str] | None = None, timeout: float = 600
    ) -> list[CommandResult]:
        """Run every command at once (the service runs up to one per core); results in the same order."""
        ids = [self.submit(cmd, env=env, timeout=timeout) for cmd in cmds]
        return [self.wait(rid, cmd, timeout) for rid, cmd in zip(ids, cmds, strict=True)]

    def run(self, cmd: str, *, env: dict[str, str] | None = None, timeout: float = 600) -> CommandResult:
        return self.run_many([cmd], env=env, timeout=timeout)[0]

    def close(self, *, keep_cache: bool = False, publish: Path | None = None) -> None:
        """End the service and drop the spool (also done when this object is dropped unclosed).
        `keep_cache`: keep the cache and `env.sh`, so a later build can still source `build_prefix` and
        reuse every compile the run made (the shims compile without the service). `publish`: once the
        service has stopped, add what its cache holds to that shared one (compile_share.publish)."""
        if (keep_cache or publish is not None) and self._finalizer.detach() is not None:
            _end(self.spool, self.service, keep_cache=keep_cache, publish=publish)
        else:
            self._finalizer()


def write_spool(spool: Path, python: str = "python3", key_by_input: bool = False) -> str:
    """A new folder `spool` holding the worker, the compiler shims and `env.sh`; the `build_prefix` that
    sources it. A build through that prefix caches its compiles in `spool/cache` with no service running
    (the shims compile in the build's own process tree). `key_by_input`: a compile the cache has not
    seen read these files preprocesses first and is looked up and kept by its preprocessed input (an
    `-E` per such unit), so a unit whose input only moved line markers is found; else, as a build, it
    compiles at once and is kept by what it read."""
    (spool / "bin").mkdir(parents=True)
    shutil.copyfile(WORKER, spool / "compile_worker.py")
    (spool / "sandboxes").mkdir()
    (spool / "sandboxes" / "__init__.py").write_text("")
    for name in SHIPPED:
        shutil.copyfile(WORKER.with_name(name), spool / "sandboxes" / name)
    for name in SHIMMED:
        shim = spool / "bin" / name
        shim.write_text(
            f'#!/bin/sh\nexec {python} {shlex.quote(str(spool / "compile_worker.py"))} shim {name} "$@"\n'
        )
        shim.chmod(0o755)
    (spool / "env.sh").write_text(
        _env_script(spool) + ("export ROCPORT_COMPILE_KEY=input\n" if key_by_input else "")
    )
    return _sourcing(spool / "env.sh")


def kept_build_prefix(folder: Path) -> str:
    """The `build_prefix` of the newest cache a service closed with `keep_cache` left under `folder` (a
    sandbox's log folder): a later build through it reuses that service's compiles. "" when there is none,
    or when it stored no object (the service only preprocessed: the shims would add their own cost to
    every compile of that build and answer none of them)."""
    kept = sorted(Path(folder).glob(".compile-*/env.sh"), key=lambda p: p.stat().st_mtime)
    if not kept or next((kept[-1].parent / "cache" / "e").glob("*.o"), None) is None:
        return ""
    return _sourcing(kept[-1])


def _end(spool: Path, service: Service, keep_cache: bool = False, publish: Path | None = None) -> None:
    """The request folder goes first (the service leaves its loop), then the process, then (what the
    cache holds published, when asked) the spool."""
    shutil.rmtree(spool / "req", ignore_errors=True)
    try:
        with contextlib.suppress(SandboxError, OSError):  # its sandbox may be gone, and the process with it
            service.stop(grace_s=2)
        if publish is not None:
            with contextlib.suppress(OSError):
                compile_share.publish(spool / "cache", publish)
    finally:
        shutil.rmtree(spool / "res" if keep_cache else spool, ignore_errors=True)


def _sourcing(env_sh: Path) -> str:
    """Shell words that source `env.sh` before the command that follows them."""
    return f". {shlex.quote(str(env_sh))}; "


def _env_script(spool: Path) -> str:
    """What `build_prefix` sources: the shims first, the compilers they stand for remembered."""
    bin_dir = shlex.quote(str(spool / "bin"))
    lines = [
        f"export PATH={bin_dir}:$PATH",
        f"export ROCPORT_COMPILE_CACHE={shlex.quote(str(spool / 'cache'))}",
    ]
    for name in SHIMMED:
        var = name.upper()
        lines.append(f'export ROCPORT_REAL_{var}="${{{var}:-}}" {var}={bin_dir}/{name}')
    return "\n".join(lines) + "\n"
