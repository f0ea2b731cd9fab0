"""Start, resume and answer a port run: the driver behind `rocport port` (no printing here)."""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from langgraph.types import Command

from agent.config import JobError, PortJob, job_to_yaml, load_job
from agent.graph import build_graph
from agent.llm import LLMError
from agent.nodes.env import RunEnv
from agent.observer import Observer, Sink
from agent.profiles import Profile, load_profile
from agent.proposer import Proposer, RulesProposer, llm_proposer_for
from agent.rundir import RunDir, new_run_id
from agent.runlock import RunLock, RunLocked
from agent.state import PortState
from agent.store import RunStore, open_checkpointer
from agent.tune.sections import continue_into_tune
from sandboxes.base import SandboxError


class PortError(RuntimeError):
    """A run cannot start or continue; the message says what to do."""


@dataclass
class PortResult:
    """How a process of a run ended: finished (green/partial), paused for review, or failed."""

    run_id: str
    status: str
    reason: str = ""
    report_path: str = ""
    counters: dict = field(default_factory=dict)
    review: list[dict] | None = None
    """The LLM patches waiting for a decision when status is 'paused'."""
    events: list[dict] = field(default_factory=list)


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
        observer.emit("note", message="no LLM endpoint configured (llm.base_url or OPENAI_BASE_URL, llm.model): "
                                      "rules-only run")
    return proposers


def start_port(job: PortJob, *, sinks: list[Sink] | None = None, review: bool = False,
               model: Any | None = None) -> PortResult:
    """Create the run (dir, runs row, checkpoint thread) and drive it until it ends or pauses."""
    profile = load_profile(job.framework.profile)
    run_id = new_run_id(profile.name)
    rundir = RunDir(run_id)
    rundir.create(job_to_yaml(job))
    lock = RunLock(rundir.path).acquire(run_id)
    store = RunStore()
    store.create(run_id, profile.name, job.framework.repo or profile.repo_url or "", job.framework.ref)
    observer = Observer(rundir, sinks)
    observer.emit("run_started", framework=profile.name, arch=job.target.arch, sandbox=job.sandbox.backend)
    initial = PortState(run_id=run_id, started_at=time.time())
    return _drive(job, profile, rundir, store, observer, review, model, initial, lock, announce=True)


def resume_port(run_id: str, *, sinks: list[Sink] | None = None, review: bool = False,
                answer: Any | None = None, model: Any | None = None) -> PortResult:
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
    store = RunStore()
    if store.get(run_id) is None:  # killed before its row was written
        store.create(run_id, profile.name, job.framework.repo or profile.repo_url or "", job.framework.ref)
    store.update(run_id, status="running")
    observer = Observer(rundir, sinks)
    observer.emit("run_resumed", answer=answer)
    resume_input = Command(resume=answer) if answer is not None else None
    return _drive(job, profile, rundir, store, observer, review, model, resume_input, lock, announce=False)


def _drive(job: PortJob, profile: Profile, rundir: RunDir, store: RunStore, observer: Observer, review: bool,
           model: Any | None, graph_input: Any, lock: RunLock, *, announce: bool) -> PortResult:
    try:
        return _invoke(job, profile, rundir, store, observer, review, model, graph_input, announce=announce)
    finally:
        lock.release()


def _invoke(job: PortJob, profile: Profile, rundir: RunDir, store: RunStore, observer: Observer, review: bool,
            model: Any | None, graph_input: Any, *, announce: bool) -> PortResult:
    saver = open_checkpointer()
    env = RunEnv(job=job, profile=profile, rundir=rundir, observer=observer, store=store, review=review,
                 proposers=_proposers(job, observer, model, announce))
    graph = build_graph(env, saver)
    config = {"configurable": {"thread_id": rundir.run_id}, "recursion_limit": 500}
    if graph_input is None and saver.get_tuple(config) is None:  # killed before the first checkpoint
        graph_input = PortState(run_id=rundir.run_id, started_at=time.time())
    try:
        out = graph.invoke(graph_input, config)
    except (SandboxError, LLMError) as exc:  # the user can fix these (image, daemon, endpoint), then resume
        store.update(rundir.run_id, status="failed", reason=str(exc))
        observer.emit("error", error=str(exc))
        raise PortError(f"run {rundir.run_id} stopped: {exc}; fix that, then continue with "
                        f"`rocport port --resume {rundir.run_id}`") from exc
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
        return PortResult(rundir.run_id, "paused", "waiting for review of LLM patches", review=pending,
                          counters=out.get("counters", {}), events=observer.events)
    status = out.get("status", "partial")
    reason = out.get("stop_reason") or status
    if status == "running":
        status = "partial"
    saved = rundir.path / "state.json"
    if saved.is_file():
        try:
            reason = json.loads(saved.read_text()).get("stop_reason") or reason
        except json.JSONDecodeError:
            reason = f"{reason} ({saved} is damaged: `rocport report` cannot read it)"
    store.update(rundir.run_id, status=status, reason=reason, counters=out.get("counters", {}))
    continue_into_tune(job, rundir.run_id, status, observer)
    return PortResult(rundir.run_id, status, reason, out.get("report_path", ""), out.get("counters", {}),
                      events=observer.events)
