"""Start, resume and answer a port run: the driver behind `rocport port` (no printing here)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langgraph.types import Command

from agent.config import JobError, PortJob, job_to_yaml, load_job
from agent.loop.graph import build_graph
from agent.loop.nodes.env import RunEnv
from agent.loop.observer import Observer, Sink
from agent.loop.rundir import RunDir, new_run_id
from agent.loop.runlock import RunLock, RunLocked, clear_stale_git_locks
from agent.loop.state import PortState, to_json
from agent.loop.store import RunStore, open_checkpointer
from agent.profiles import Profile, load_profile
from agent.proposers.base import Proposer, RulesProposer, llm_proposer_for
from agent.proposers.llm.model import LLMError
from agent.tune.sections import continue_into_tune
from sandboxes.base import SandboxError

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig  # what LangGraph takes as a run's config


class PortError(RuntimeError):
    """A run cannot start or continue; the message says what to do."""


@dataclass
class RunRecord:
    """How a process of a run ended (finished green/partial, or paused for review) and what it knows:
    the record evals, sweeps and the CLI read instead of the run directory's files."""

    run_id: str
    status: str
    reason: str = ""
    report_path: str = ""
    counters: dict = field(default_factory=dict)
    review: list[dict] | None = None
    """The LLM patches waiting for a decision when status is 'paused'."""
    events: list[dict] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)
    """The run's final PortState as JSON types (the fields state.json holds)."""


def _proposers(job: PortJob, observer: Observer, model: Any | None, announce: bool) -> list[Proposer]:
    if job.strategy == "none":
        if announce:
            observer.emit("note", message="strategy none: validate only, no patches will be proposed")
        return []
    proposers: list[Proposer] = [] if job.strategy == "llm" else [RulesProposer()]
    llm = llm_proposer_for(job.llm, model=model) if job.strategy != "rules" else None
    if llm is not None:
        proposers.append(llm)
    elif announce and job.strategy != "rules":
        observer.emit(
            "note",
            message="no LLM endpoint configured (llm.base_url or OPENAI_BASE_URL, llm.model): rules-only run",
        )
    return proposers


def start_port(
    job: PortJob,
    *,
    sinks: list[Sink] | None = None,
    review: bool = False,
    model: Any | None = None,
    built: RunRecord | None = None,
) -> RunRecord:
    """Create the run (dir, runs row, checkpoint thread) and drive it until it ends or pauses.

    `built`: a finished run whose build passed. This run then validates that run's clone as it is: it
    enters the graph at the load check (no checkout, no rebuild) and, with strategy none, proposes
    nothing. A sweep's later cells of one build group run this way."""
    seed = on_build(job, built) if built is not None else {}
    profile = load_profile(job.framework.profile)
    run_id = new_run_id(profile.name)
    rundir = RunDir(run_id)
    rundir.create(job_to_yaml(job))
    lock = RunLock(rundir.path).acquire(run_id)
    store = RunStore()
    store.create(run_id, profile.name, job.framework.repo or profile.repo_url or "", job.framework.ref)
    observer = Observer(rundir, sinks)
    observer.emit(
        "run_started",
        framework=profile.name,
        arch=job.target.arch,
        sandbox=job.sandbox.backend,
        **({"built_by": built.run_id} if built is not None else {}),
    )
    initial = PortState(run_id=run_id, started_at=time.time(), **seed)
    return _drive(job, profile, rundir, store, observer, review, model, initial, lock, announce=True)


def on_build(job: PortJob, built: RunRecord) -> dict[str, Any]:
    """The PortState fields a run on `built`'s clone starts from: its clone, branch and commits, and
    its build as passed (the graph's START router then enters at the load check)."""
    state = built.state
    build = state.get("stages", {}).get("build", {})
    repo_dir = state.get("repo_dir", "")
    if build.get("status") != "passed" or not Path(repo_dir, ".git").exists():
        raise PortError(f"run {built.run_id} has no passed build to run on (build {build.get('status')})")
    if job.strategy != "none":
        raise PortError(f"a run on run {built.run_id}'s build validates it as it is: use strategy none")
    return {
        "repo_dir": repo_dir,
        "branch": state.get("branch", ""),
        "base_commit": state.get("base_commit", ""),
        "head": state.get("head") or state.get("base_commit", ""),
        "stages": {"build": {**build, "detail": f"the build of run {built.run_id}, reused"}},
    }


def resume_port(
    run_id: str,
    *,
    sinks: list[Sink] | None = None,
    review: bool = False,
    answer: Any | None = None,
    model: Any | None = None,
) -> RunRecord:
    """Continue a killed or paused run from its last checkpoint; kept patches are not redone."""
    try:
        rundir = RunDir(run_id)
    except ValueError as exc:
        raise PortError(str(exc)) from exc
    if not rundir.exists():
        raise PortError(f"no run {run_id!r} under {rundir.path.parent}: see `rocport runs`")
    try:
        job = load_job([str(rundir.job_file)])
    except JobError as exc:
        raise PortError(f"run {run_id}: its job.yaml no longer validates: {exc}") from exc
    try:
        lock = RunLock(rundir.path).acquire(run_id)
    except RunLocked as exc:
        raise PortError(str(exc)) from exc
    profile = load_profile(job.framework.profile)
    # the run lock is ours and its last owner is dead: a git lock it left in the clone is stale
    stale = clear_stale_git_locks(rundir.repo)
    store = RunStore()
    if store.get(run_id) is None:  # killed before its row was written
        store.create(run_id, profile.name, job.framework.repo or profile.repo_url or "", job.framework.ref)
    store.update(run_id, status="running")
    observer = Observer(rundir, sinks)
    observer.emit("run_resumed", answer=answer)
    if stale:
        observer.emit(
            "note", message=f"removed git lock(s) the killed run left in its clone: {', '.join(stale)}"
        )
    resume_input: Command[Any] | None = Command(resume=answer) if answer is not None else None
    return _drive(job, profile, rundir, store, observer, review, model, resume_input, lock, announce=False)


def _drive(
    job: PortJob,
    profile: Profile,
    rundir: RunDir,
    store: RunStore,
    observer: Observer,
    review: bool,
    model: Any | None,
    graph_input: Any,
    lock: RunLock,
    *,
    announce: bool,
) -> RunRecord:
    try:
        return _invoke(job, profile, rundir, store, observer, review, model, graph_input, announce=announce)
    finally:
        lock.release()


def _invoke(
    job: PortJob,
    profile: Profile,
    rundir: RunDir,
    store: RunStore,
    observer: Observer,
    review: bool,
    model: Any | None,
    graph_input: Any,
    *,
    announce: bool,
) -> RunRecord:
    saver = open_checkpointer()
    env = RunEnv(
        job=job,
        profile=profile,
        rundir=rundir,
        observer=observer,
        store=store,
        review=review,
        proposers=_proposers(job, observer, model, announce),
    )
    graph = build_graph(env, saver)
    config: RunnableConfig = {"configurable": {"thread_id": rundir.run_id}, "recursion_limit": 500}
    if graph_input is None and saver.get_tuple(config) is None:  # killed before the first checkpoint
        graph_input = PortState(run_id=rundir.run_id, started_at=time.time())
    env.repo = _clone_of(graph, config, graph_input)
    try:
        out = graph.invoke(graph_input, config)
    except (SandboxError, LLMError) as exc:  # the user can fix these (image, daemon, endpoint), then resume
        store.update(rundir.run_id, status="failed", reason=str(exc))
        observer.emit("error", error=str(exc))
        raise PortError(
            f"run {rundir.run_id} stopped: {exc}; fix that, then continue with "
            f"`rocport port --resume {rundir.run_id}`"
        ) from exc
    except Exception as exc:  # a node failed: record it, keep the checkpoint so --resume can retry
        store.update(rundir.run_id, status="failed", reason=f"{type(exc).__name__}: {exc}")
        observer.emit("error", error=f"{type(exc).__name__}: {exc}")
        raise
    finally:
        env.close()
        saver.conn.close()
    if out.get("__interrupt__"):
        pending = out["__interrupt__"][0].value.get("review", [])
        store.update(rundir.run_id, status="paused", reason="waiting for review of LLM patches")
        observer.emit("review", patches=pending)
        return RunRecord(
            rundir.run_id,
            "paused",
            "waiting for review of LLM patches",
            review=pending,
            counters=out.get("counters", {}),
            events=observer.events,
            state=_state_of(out),
        )
    status = out.get("status", "partial")
    reason = out.get("stop_reason") or status
    if status == "running":
        status = "partial"
    saved = rundir.path / "state.json"
    if saved.is_file():
        try:
            json.loads(saved.read_text())
        except json.JSONDecodeError:
            reason = f"{reason} ({saved} is damaged: `rocport report` cannot read it)"
    store.update(rundir.run_id, status=status, reason=reason, counters=out.get("counters", {}))
    continue_into_tune(job, rundir.run_id, status, observer)
    return RunRecord(
        rundir.run_id,
        status,
        reason,
        out.get("report_path", ""),
        out.get("counters", {}),
        events=observer.events,
        state=_state_of(out),
    )


def _clone_of(graph: Any, config: Any, graph_input: Any) -> Path | None:
    """The clone the state names (another run's, for a run on a build; also when resumed), if any."""
    if isinstance(graph_input, PortState):
        repo_dir = graph_input.repo_dir
    else:
        repo_dir = graph.get_state(config).values.get("repo_dir", "")
    return Path(repo_dir) if repo_dir else None


def _state_of(out: dict[str, Any]) -> dict[str, Any]:
    """The graph's final values as the JSON-typed PortState fields (what state.json holds)."""
    return to_json(PortState(**{f.name: out[f.name] for f in fields(PortState) if f.name in out}))
