"""The port loop as a LangGraph StateGraph.

```
checkout -> scan -> preflight -> first_wave --failures--> propose
                                     \\--none--> build -> diagnose --failures--> propose
propose -> apply_check --unmasked--> propose
                \\--wave done--> build | load_check
diagnose --green--> load_check --failures--> propose
                        \\--ok--> serve --failures--> propose
                                    \\--ok--> bench -> report
```
first_wave compiles alone the units the scan flags, so their errors start the first wave before any full
build (agent.loop.nodes.first_wave); the naive baseline goes straight to the build.
A run on another run's build (`start_port(job, built=...)`: its clone given, the build passed) enters at
load_check: no checkout, no rebuild.
`--until unit`: preflight -> units (hipcc on every unit of the ROCm build, one at a time) -> report.
Any node may set `stop_reason` (a budget, a stall, nothing to propose); routers then go to report.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Literal, Protocol

from langgraph.graph import END, START, StateGraph

from agent.loop.nodes.apply_check import apply_check
from agent.loop.nodes.budget import budget_stop
from agent.loop.nodes.build import build, diagnose
from agent.loop.nodes.checkout import checkout
from agent.loop.nodes.env import RunEnv
from agent.loop.nodes.first_wave import before_first_build, first_wave
from agent.loop.nodes.load_check import load_check
from agent.loop.nodes.preflight import preflight
from agent.loop.nodes.propose import propose
from agent.loop.nodes.report import report, write_state
from agent.loop.nodes.scan import scan
from agent.loop.nodes.serve import bench, serve
from agent.loop.nodes.units import compile_units
from agent.loop.phases import NODE_PHASE
from agent.loop.state import PortState, apply_update

NODES: dict[str, Callable[[PortState, RunEnv], dict]] = {
    "checkout": checkout,
    "scan": scan,
    "preflight": preflight,
    "units": compile_units,
    "first_wave": first_wave,
    "build": build,
    "diagnose": diagnose,
    "propose": propose,
    "apply_check": apply_check,
    "load_check": load_check,
    "serve": serve,
    "bench": bench,
    "report": report,
}


class BoundNode(Protocol):
    """A node as LangGraph calls it: the state in, the partial update out. (A Protocol, not a Callable
    type: LangGraph's add_node overloads only match a callable whose parameter is named `state`.)"""

    def __call__(self, state: PortState) -> dict[str, Any]: ...


def _bind(name: str, fn: Callable[[PortState, RunEnv], dict], env: RunEnv) -> BoundNode:
    """The node as LangGraph calls it: announce the phase, account wall time, record progress."""

    def node(state: PortState) -> dict:
        env.mark = env.mark or time.monotonic()
        env.observer.emit("phase", phase=name, iteration=state.iteration)
        with env.clock.span(NODE_PHASE.get(name, name)):
            update = fn(state, env)
        env.observer.emit("timing", seconds=env.clock.since_last())
        now = time.monotonic()
        update = {**update, "phase": name, "elapsed_s": now - env.mark}  # reduced: added to the total
        if update.get("failures"):  # reduced: added to what the run already knows
            update["known_failures"] = {f.key: f for f in update["failures"]}
        env.mark = now
        if name != "report":
            write_state(apply_update(state, update), env)
        if env.store is not None:
            env.store.update(state.run_id, phase=name, counters=update.get("counters", state.counters))
        return update

    node.__name__ = name
    node.__doc__ = fn.__doc__
    return node


def enter(state: PortState) -> Literal["checkout", "load_check"]:
    """A run on another run's built clone starts at the load check; every other run at the checkout."""
    if state.repo_dir and state.stage("build").status == "passed":
        return "load_check"
    return "checkout"


def after_diagnosis(state: PortState) -> Literal["propose", "load_check", "serve", "bench", "report"]:
    """Failures go to propose; a clean stage moves on to the next one."""
    if state.stop_reason:
        return "report"
    if state.failures:
        return "propose"
    nxt = {"build": "load_check", "load": "serve", "serve": "bench"}.get(state.failure_stage)
    if nxt is None:
        raise ValueError(f"unexpected failure_stage {state.failure_stage!r} after a diagnosis")
    return nxt  # type: ignore[return-value]


def after_propose(state: PortState) -> Literal["apply_check", "build", "report"]:
    """Proposals are checked; nothing to propose ends the run, except before the first full build, which
    then runs and reports every failing unit, not only those the scan flagged."""
    if state.stop_reason:
        return "report"
    if not state.proposals:
        return "build" if before_first_build(state) else "report"
    return "apply_check"


def after_first_wave(state: PortState) -> Literal["propose", "build"]:
    return "propose" if state.failures else "build"


def after_apply(state: PortState) -> Literal["propose", "build", "load_check", "serve", "report"]:
    """Unmasked failures: propose again (same wave). Wave done: back to the stage that failed; a load
    fix whose recheck already loaded cleanly goes straight to the launch."""
    if state.stop_reason:
        return "report"
    if state.failures:
        return "propose"
    if state.failure_stage == "build":
        return "build"
    if state.failure_stage in ("load", "serve"):
        return "serve" if state.stage("load").status == "passed" else "load_check"
    raise ValueError(f"unexpected failure_stage {state.failure_stage!r} after apply_check")


def after_apply_naive(state: PortState) -> Literal["propose", "build", "load_check", "serve", "report"]:
    """The naive baseline proves every patch by a full rebuild, or by a server launch for load faults."""
    route = after_apply(state)
    return "serve" if route == "load_check" else route


def make_after_apply(env: RunEnv) -> Callable[[PortState], str]:
    decide = after_apply_naive if env.job.strategy == "naive" else after_apply

    def route(state: PortState) -> Literal["propose", "build", "load_check", "serve", "report"]:
        nxt = decide(state)
        if nxt == "serve" and budget_stop(state, env, "serve"):
            return "report"
        return nxt

    return route


def make_after_load(env: RunEnv) -> Callable[[PortState], str]:
    """After a clean load check the one server launch follows, if the launch budget allows."""

    def after_load(state: PortState) -> Literal["propose", "serve", "report"]:
        route = after_diagnosis(state)
        if route == "serve" and budget_stop(state, env, "serve"):
            return "report"
        return route  # type: ignore[return-value]

    return after_load


STAGES = ("scan", "unit", "build", "load", "serve", "bench")
"""What `--until` accepts, in order; a node whose stage comes after it routes to report instead."""
_NODE_STAGE = {
    "preflight": "unit",
    "units": "unit",
    "first_wave": "build",
    "build": "build",
    "load_check": "load",
    "serve": "serve",
    "bench": "bench",
}


def until(env: RunEnv, router: Callable[[PortState], str]) -> Callable[[PortState], str]:
    """The router, stopping at the job's `until` stage (the report says what ran and what was skipped)."""
    last = env.job.until

    def route(state: PortState) -> Any:
        nxt = router(state)
        stage = _NODE_STAGE.get(nxt)
        if last and stage and STAGES.index(stage) > STAGES.index(last):
            return "report"
        return nxt

    route.__name__ = getattr(router, "__name__", "route")
    return route


def make_after_preflight(env: RunEnv) -> Callable[[PortState], str]:
    """An image that lacks what the build needs stops here (stop_reason says what and where to get it);
    `--until unit` goes to the unit compiles of the whole ROCm build instead."""

    def after_preflight(state: PortState) -> Literal["units", "first_wave", "report"]:
        if state.stop_reason:
            return "report"
        return "units" if env.job.until == "unit" else "first_wave"

    return after_preflight


def build_graph(env: RunEnv, checkpointer: Any = None):
    """Compile the port graph with nodes bound to `env` (live handles stay out of state)."""
    graph = StateGraph(PortState)
    for name, fn in NODES.items():
        graph.add_node(name, _bind(name, fn, env))
    graph.add_conditional_edges(START, until(env, enter), ["checkout", "load_check", "report"])
    graph.add_edge("checkout", "scan")
    graph.add_conditional_edges("scan", until(env, lambda state: "preflight"), ["preflight", "report"])
    graph.add_conditional_edges(
        "preflight", until(env, make_after_preflight(env)), ["units", "first_wave", "report"]
    )
    graph.add_conditional_edges("first_wave", until(env, after_first_wave), ["propose", "build", "report"])
    graph.add_edge("units", "report")
    graph.add_edge("build", "diagnose")
    graph.add_conditional_edges("diagnose", until(env, after_diagnosis), ["propose", "load_check", "report"])
    graph.add_conditional_edges("propose", until(env, after_propose), ["apply_check", "build", "report"])
    graph.add_conditional_edges(
        "apply_check",
        until(env, make_after_apply(env)),
        ["propose", "build", "load_check", "serve", "report"],
    )
    graph.add_conditional_edges(
        "load_check", until(env, make_after_load(env)), ["propose", "serve", "report"]
    )
    graph.add_conditional_edges("serve", until(env, after_diagnosis), ["propose", "bench", "report"])
    graph.add_edge("bench", "report")
    graph.add_edge("report", END)
    return graph.compile(checkpointer=checkpointer)
