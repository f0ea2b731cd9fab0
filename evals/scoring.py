"""The eval's CUDA scoring builds: does the port's final tree still build with nvcc?

Each strategy's scoring builds share one compile cache (Scoring), as a CUDA CI with ccache would, and
every strategy's start from the CUDA build of each task's starting tree (Baselines), made once per
eval: as an upstream CUDA CI's cache is warm from the base branch, a port's scoring build compiles
only the units whose preprocessed input the port changed. A guard that leaves the CUDA side's
preprocessed text alone (only line markers move) is then proven by the cache, not recompiled.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from evals.taskdefs import Task, materialize


@dataclass
class Scoring:
    """One compile cache for an eval's CUDA scoring builds, per strategy (`shared`): a scoring build
    compiles only the units whose input differs from every earlier task's (and from the starting trees
    in `baseline`, when given), as a CUDA CI with ccache would. Each build works on a copy (a spool next
    to the task's repo); what it compiled is added to `shared` only when its run never asked an LLM, for
    the reason the port's own shared cache has (sandboxes/compile_share.py): a build of LLM-written code
    could plant an object that would pass a later task's build."""

    shared: Path
    baseline: Path | None = None
    """The starting trees' cache (Baselines.cache): read, never written by a port's scoring build."""
    by_input: bool = False
    """Compiles looked up and kept by their preprocessed input (write_spool's key_by_input): how a unit
    whose CUDA text a guard only moved is found in a starting tree's build; Baselines' builds use it."""
    ledger: list[str] = field(default_factory=list)
    """How each compile of the builds so far was served: `miss`, else the kind of cache hit."""

    def build(self, repo: Path, command: str, timeout: float, kept: Path | None, trusted: bool) -> bool:
        from sandboxes import LocalSandbox, compile_share
        from sandboxes.compile_service import write_spool
        from sandboxes.local import HOST_PYTHON

        spool = repo.parent / "cuda-scoring-spool"
        shutil.rmtree(spool, ignore_errors=True)
        prefix = write_spool(spool, HOST_PYTHON, key_by_input=self.by_input)
        for source in (self.baseline, self.shared):
            if source is not None:
                compile_share.seed(source, spool / "cache")
        for cache in sorted(Path(kept).glob(".compile-*/cache")) if kept is not None else []:
            compile_share.seed(cache, spool / "cache")  # what the run's CUDA checks compiled
        try:
            with LocalSandbox(repo) as sb:
                ok = sb.run(prefix + command, timeout=timeout).ok
            if trusted:
                compile_share.publish(spool / "cache", self.shared)
            with contextlib.suppress(OSError):
                lines = (spool / "cache" / "ledger").read_text(encoding="utf-8").splitlines()
                self.ledger.extend(line.split("\t")[0] for line in lines)
            return ok
        finally:
            shutil.rmtree(spool, ignore_errors=True)


@dataclass
class Baselines:
    """The CUDA build of each task's starting tree, once per eval (`build`), into one cache (`cache`)
    that every strategy's scoring builds start from. The starting trees are the task files' own (no
    model wrote them), so their objects are trusted. `seconds` and `ok` say, per task, what each cost
    and whether the starting tree built: the time is the eval's, not any strategy's."""

    cache: Path
    seconds: dict[str, float] = field(default_factory=dict)
    ok: dict[str, bool | None] = field(default_factory=dict)

    def build(self, task: Task, workroot: Path) -> bool | None:
        """The starting tree of `task` built with nvcc into `cache` (None: no CUDA build here); once."""
        if task.name in self.ok:
            return self.ok[task.name]
        started = time.monotonic()
        work = workroot / f"{task.name}-cuda-baseline"
        shutil.rmtree(work, ignore_errors=True)
        repo = materialize(task, work / "repo")
        try:
            self.ok[task.name] = cuda_build(
                task, repo, scoring=Scoring(self.cache, by_input=True), trusted=True
            )
        finally:
            shutil.rmtree(work, ignore_errors=True)
        self.seconds[task.name] = time.monotonic() - started
        return self.ok[task.name]


def scoring_cache(workroot: Path, name: str, over_baseline: bool = False) -> Scoring:
    """The scoring cache `name` (a strategy's) of the eval in `workroot`; `over_baseline`: its builds
    start from the eval's Baselines (built first) and look units up by their preprocessed input."""
    base = baselines(workroot).cache if over_baseline else None
    return Scoring(workroot / "cuda-scoring" / name.replace("+", "-"), baseline=base, by_input=over_baseline)


def baselines(workroot: Path) -> Baselines:
    """The starting trees' CUDA builds of the eval in `workroot` (the folder may not exist yet)."""
    return Baselines(workroot / "cuda-baseline")


def cuda_build(
    task: Task,
    repo: Path,
    cuda_cache: Path | None = None,
    scoring: Scoring | None = None,
    trusted: bool = False,
) -> bool | None:
    """The task's CUDA build on the host with nvcc, on the final work branch (None: no nvcc here). Given
    the run's kept nvcc cache (RunDir.cuda_cache), it goes through it: units the CUDA checks already compiled
    in their final state are reused, as a user's CUDA CI would reuse them with ccache. Given `scoring`, the
    build also reuses what the eval's earlier scoring builds compiled, and adds to it when `trusted` (the
    run never asked an LLM; see Scoring)."""
    from agent.profiles import load_profile
    from sandboxes import LocalSandbox
    from sandboxes.compile_service import kept_build_prefix

    profile = load_profile(task.profile)
    if profile.build.cuda is None or not _which("nvcc"):
        return None
    if scoring is not None:
        return scoring.build(repo, profile.build.cuda, profile.build.timeout_s, cuda_cache, trusted)
    prefix = kept_build_prefix(cuda_cache) if cuda_cache is not None else ""
    with LocalSandbox(repo) as sb:
        return sb.run(prefix + profile.build.cuda, timeout=profile.build.timeout_s).ok


def _which(tool: str) -> bool:
    return subprocess.run(["bash", "-c", f"command -v {tool}"], capture_output=True).returncode == 0
