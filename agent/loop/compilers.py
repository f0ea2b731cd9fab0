"""The run's warm compile services: hipcc inside the run's sandbox, nvcc on the host, one cache each.

Unit checks and full builds share them: a unit check's object is what the next full build reuses
(sandboxes/compile_service.py). When a service cannot start (an image without python3), compiles fall
back to one sandbox command each and the run says so. nvcc's cache outlives the run (in the run dir's
`cuda-cache/`): a CUDA build of the final tree afterwards (the eval's scoring build) goes through it and
reuses every unit the CUDA checks compiled (sandboxes.compile_service.kept_build_prefix). hipcc's cache
starts from the one runs on this machine share per image and, when the run never asked an LLM, adds to it
at the end (shared_cache_dir, RunDir.llm_consulted; sandboxes/compile_share.py).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.loop.rundir import rocport_home
from sandboxes.base import CommandResult, Sandbox, SandboxError
from sandboxes.compile_service import CompileService
from sandboxes.local import LocalSandbox


@dataclass
class Compilers:
    """hipcc's service (in the run's sandbox, started at once) and nvcc's (on the host, started by the
    first CUDA check, or ahead of it by `prepare_cuda`: a run with no kernel patch never starts it); None
    where unavailable."""

    hip: CompileService | None = None
    repo: Path | None = None
    rundir: Any = None
    observer: Any = None
    notes: list[str] = field(default_factory=list)
    shared: Path | None = None
    """The compile cache runs on this machine share (sandboxes/compile_share.py); hipcc's starts from it."""
    _cuda: CompileService | None = None
    _cuda_box: Sandbox | None = None
    _cuda_tried: bool = False
    _cuda_ahead: threading.Thread | None = None
    _ahead_error: Exception | None = None

    @classmethod
    def start(
        cls,
        sandbox: Sandbox,
        repo: Path,
        observer: Any = None,
        rundir: Any = None,
        shared: Path | None = None,
    ) -> Compilers:
        """Start hipcc's service; what could not start is a note, never an error."""
        out = cls(repo=repo, rundir=rundir, observer=observer, shared=shared)
        out.hip = out._start(sandbox, "hipcc", rundir, shared)
        return out

    @property
    def cuda_box(self) -> Sandbox | None:
        """The host sandbox nvcc runs in (None: no nvcc on this machine)."""
        self._start_cuda()
        return self._cuda_box

    @property
    def cuda(self) -> CompileService | None:
        self._start_cuda()
        return self._cuda

    def prepare_cuda(self) -> None:
        """Start nvcc's service now, on a thread of its own (kernel patches are coming: the first wave's
        unit compiles run meanwhile), so the first CUDA check finds it ready instead of waiting for its
        start-up (a process, a spool, a poll: ~0.1-0.3 s)."""
        if self._cuda_tried or self._cuda_ahead is not None or self.repo is None:
            return
        self._cuda_ahead = threading.Thread(target=self._start_ahead, daemon=True)
        self._cuda_ahead.start()

    def _start_ahead(self) -> None:
        try:
            self._start_cuda_now(False)
        except Exception as exc:  # noqa: BLE001 - handed to the thread that waits for it (_start_cuda)
            self._ahead_error = exc

    def _start_cuda(self) -> None:
        ahead, self._cuda_ahead = self._cuda_ahead, None
        if ahead is not None:  # started ahead: wait for it, then say here what could not start
            ahead.join()
            error, self._ahead_error = self._ahead_error, None
            if error is not None:
                raise error
            if self._cuda is None and self._cuda_box is not None and self.notes:
                self._tell(self.notes[-1])
            return
        if not self._cuda_tried:
            self._start_cuda_now(True)

    def _start_cuda_now(self, tell: bool) -> None:
        if self._cuda_tried or self.repo is None:
            return
        self._cuda_tried = True
        if shutil.which("nvcc") is not None:
            kept = self.rundir.cuda_cache if self.rundir is not None else None
            self._cuda_box = LocalSandbox(self.repo, logdir=kept)
            self._cuda = self._start(self._cuda_box, "nvcc", self.rundir, tell=tell)

    def _start(
        self, box: Sandbox, what: str, rundir: Any, shared: Path | None = None, tell: bool = True
    ) -> CompileService | None:
        try:
            service = CompileService.start(box, shared=shared)
        except (RuntimeError, OSError) as exc:
            self.notes.append(f"{what} unit compiles run one command each: {exc}")
            if tell:
                self._tell(self.notes[-1])
            return None
        if rundir is not None:
            service.on_result = _logger(rundir, what)
        return service

    def _tell(self, note: str) -> None:
        if self.observer is not None:
            self.observer.emit("note", message=note)

    def build_prefix(self) -> str:
        """What a full ROCm build command is prefixed with to compile through the shared cache; the
        warm-ups not started yet are dropped (the build compiles those units at full priority) and those
        running are left to finish: the build's compile of their unit waits for them."""
        if self.hip is None or not self.hip.alive():
            return ""
        self.hip.promote_warmups()
        return self.hip.build_prefix()

    def stats(self) -> dict[str, int]:
        """Compiles the caches answered and missed, unit checks and full builds alike (from each cache's
        ledger), and the requests the services answered (for the run's events and the benchmark)."""
        services = [s for s in (self.hip, self._cuda) if s is not None]
        kinds: dict[str, int] = {}
        for service in services:
            ledger = service.cache_dir / "ledger"
            for line in ledger.read_text().splitlines() if ledger.exists() else []:
                kind = line.split("\t", 1)[0]
                kinds[kind] = kinds.get(kind, 0) + 1
        return {
            "compile_requests": sum(s.stats.requests for s in services),
            "compile_cache_hits": sum(n for kind, n in kinds.items() if kind != "miss"),
            "compile_cache_misses": kinds.get("miss", 0),
        }

    def close(self, *, publish: bool = False) -> None:
        """End the services; `publish`: add hipcc's compiles to the shared cache (a run whose sandbox ran
        nothing an LLM proposed: see RunDir.llm_consulted)."""
        if self._cuda_ahead is not None:  # a start under way ends with the rest, not after them
            with contextlib.suppress(Exception):  # a start that failed left nothing to end
                self._start_cuda()
        for service in (self.hip, self._cuda):
            if service is not None:
                try:
                    share = self.shared if publish and service is self.hip else None
                    service.close(keep_cache=service is self._cuda and self.rundir is not None, publish=share)
                except SandboxError:  # a container already gone took its service with it
                    continue
        if self._cuda_box is not None:
            self._cuda_box.close()
        self.hip = self._cuda = self._cuda_box = None


def shared_cache_dir(compile_cache: str, backend: str, image: str) -> Path | None:
    """The shared compile cache of one image (or of the host, for the local sandbox); None when the job
    asks for a cache of the run's own."""
    if compile_cache != "shared":
        return None
    base = os.environ.get("ROCPORT_SHARED_COMPILE_CACHE") or rocport_home() / "compile-cache"
    return Path(base) / re.sub(r"[^A-Za-z0-9._-]+", "_", image if backend == "docker" else "local")


def _logger(rundir: Any, what: str):
    """Keep each answered compile in the run dir's logs, as a sandbox command would be."""

    def log(result: CommandResult, cached: str) -> None:
        words = [w for w in result.cmd.split() if not w.startswith("-")]
        name = "-".join([what, *[Path(w).name for w in words[1:] if "/" in w][:1]])
        if cached:
            result = CommandResult(
                result.cmd,
                result.returncode,
                result.stdout,
                f"# rocport compile cache: {cached} hit (same preprocessed input)\n" + result.stderr,
                result.duration_s,
                result.timed_out,
            )
        rundir.log_command(name, result)

    return log
