"""The eval runner: each task's faulty framework through `rocport port` in real sandboxes, scored.

A task is resolved when the run reaches every success criterion of the task (and, for a decline
task, commits no code patch and names the environment problem). The table per task shows what the
port cost: full builds, per-unit compiles, server launches, LLM tokens and wall time.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from evals.scoring import Baselines, Scoring, cuda_build, scoring_cache
from evals.taskdefs import Task, materialize

STRATEGIES = ("rules", "llm", "rules+llm", "naive")


@dataclass
class TaskRun:
    """One task under one strategy: the verdict and what it cost."""

    task: str
    strategy: str
    resolved: bool
    reason: str
    criteria: dict[str, bool] = field(default_factory=dict)
    run_id: str = ""
    status: str = ""
    builds: int = 0
    unit_compiles: int = 0
    launches: int = 0
    llm_tokens: int = 0
    patches_kept: int = 0
    wall_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def job_for(task: Task, repo: Path, checkpoint: Path, strategy: str) -> dict[str, Any]:
    """The PortJob (as a dict) that ports one materialized task."""
    return {
        "framework": {"profile": task.profile, "repo": str(repo)},
        "model": {"path": str(checkpoint), "name": task.framework},
        "target": {"arch": task.target_arch, "image": task.image},
        "sandbox": {"backend": "docker"},
        "strategy": strategy,
        "serve": {"extra_args": task.launch_args},
        "bench": {
            "isl": task.bench.input_len,
            "osl": task.bench.output_len,
            "num_prompts": task.bench.num_prompts,
            "max_concurrency": task.bench.concurrency,
            "cache_hit_rate": task.bench.prefix_hit,
        },
    }


def criteria_met(task: Task, state: dict, cuda_build_ok: bool | None) -> dict[str, bool]:
    stages = state.get("stages", {})
    passed = {k for k, v in stages.items() if v.get("status") == "passed"}
    return {
        "rocm_build": "build" in passed,
        "cuda_build": bool(cuda_build_ok),
        "server_loads": "serve" in passed,
        "smoke": "serve" in passed and bool(stages.get("serve", {}).get("smoke", True)),
        "bench_valid": "bench" in passed,
    }


def verdict(task: Task, state: dict, criteria: dict[str, bool]) -> tuple[bool, str]:
    missing = [c for c in task.success if not criteria.get(c)]
    kept = [o for o in state.get("outcomes", []) if o.get("kept")]
    if task.expect == "decline":
        if kept:
            return False, f"patched code for an environment problem ({len(kept)} patch(es) kept)"
        if not state.get("unfixable") and not str(state.get("stop_reason", "")).startswith("environment"):
            return False, "did not report the environment problem"
        if missing:
            return False, f"declined, but {', '.join(missing)} not met"
        return True, "declined: " + "; ".join(u.get("reason", "") for u in state.get("unfixable", []))[:200]
    if missing:
        return False, f"{', '.join(missing)} not met: {state.get('stop_reason', '')}"
    return True, state.get("stop_reason", "green")


def run_task(
    task: Task,
    strategy: str,
    workroot: Path,
    *,
    model: Any = None,
    sinks: list | None = None,
    scoring: Scoring | None = None,
) -> TaskRun:
    """Materialize the task, write its checkpoint, port it, and score the result (the CUDA build through
    `scoring`'s cache when given)."""
    from agent.config import validate_job
    from agent.loop.port import start_port
    from agent.loop.rundir import RunDir

    started = time.monotonic()
    work = workroot / f"{task.name}-{strategy.replace('+', '-')}"
    repo = materialize(task, work / "repo")
    checkpoint = work / "checkpoint"
    # the task file's own command line, written by us, not by a model
    subprocess.run(  # noqa: S602
        task.checkpoint_command(str(checkpoint)),
        shell=True,
        cwd=repo,
        check=True,
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(repo)},
    )
    job = validate_job(job_for(task, repo, checkpoint, strategy))
    result = start_port(job, model=model, sinks=sinks)
    state = result.state
    clone = Path(state.get("repo_dir") or repo)
    rundir = RunDir(result.run_id)
    cuda_ok = (
        cuda_build(task, clone, rundir.cuda_cache, scoring, trusted=not rundir.llm_consulted())
        if "cuda_build" in task.success
        else True
    )
    crit = criteria_met(task, state, cuda_ok)
    resolved, reason = verdict(task, state, crit)
    c = state.get("counters", {})
    return TaskRun(
        task=task.name,
        strategy=strategy,
        resolved=resolved,
        reason=reason,
        criteria=crit,
        run_id=result.run_id,
        status=result.status,
        builds=c.get("builds", 0),
        unit_compiles=c.get("unit_compiles", 0),
        launches=c.get("launches", 0),
        llm_tokens=c.get("tokens_in", 0) + c.get("tokens_out", 0),
        patches_kept=sum(1 for o in state.get("outcomes", []) if o.get("kept")),
        wall_s=time.monotonic() - started,
    )


def run_eval(
    tasks: list[Task],
    strategies: list[str],
    workroot: Path,
    *,
    jobs: int = 1,
    model: Any = None,
    on_result: Callable[[TaskRun], None] | None = None,
    baseline: Baselines | None = None,
) -> list[TaskRun]:
    """Every task under every strategy, `jobs` at a time; a task that crashes is scored unresolved.
    `on_result` hears of each finished task (the CLI's `[k/N]` lines). Each strategy's CUDA scoring builds
    share one cache (Scoring), under `workroot`; given `baseline` (evals.scoring.baselines(workroot)), the
    starting trees are built with CUDA first, once for all strategies, and every scoring build starts from
    what they compiled."""

    def one(pair: tuple[Task, str]) -> TaskRun:
        task, strategy = pair
        try:
            run = run_task(
                task,
                strategy,
                workroot,
                model=model,
                scoring=scoring_cache(workroot, strategy, baseline is not None),
            )
        except Exception as exc:  # noqa: BLE001 - one task's crash must not end the eval; it is a result
            run = TaskRun(
                task=task.name,
                strategy=strategy,
                resolved=False,
                reason=f"rocport error: {type(exc).__name__}: {str(exc)[:200]}",
            )
        if on_result is not None:
            on_result(run)
        return run

    pairs = [(t, s) for s in strategies for t in tasks]
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        if baseline is not None:
            wanted = [t for t in tasks if "cuda_build" in t.success]
            list(pool.map(lambda t: baseline.build(t, workroot), wanted))
        return list(pool.map(one, pairs))


def totals(runs: list[TaskRun]) -> dict[str, dict[str, Any]]:
    """Per strategy: resolved count and summed costs."""
    out: dict[str, dict[str, Any]] = {}
    for r in runs:
        t = out.setdefault(
            r.strategy,
            {
                "tasks": 0,
                "resolved": 0,
                "builds": 0,
                "unit_compiles": 0,
                "launches": 0,
                "llm_tokens": 0,
                "wall_s": 0.0,
            },
        )
        t["tasks"] += 1
        t["resolved"] += int(r.resolved)
        for k in ("builds", "unit_compiles", "launches", "llm_tokens", "wall_s"):
            t[k] += getattr(r, k)
    return out
