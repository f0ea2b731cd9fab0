"""report: the run's verdict, state.json, and report.md/.html rendered by tools.report from the run dir."""

from __future__ import annotations

import json

from agent.loop.nodes.env import RunEnv
from agent.loop.state import PortState, to_json

_ORDER = ("unit", "build", "load", "serve", "bench")


def verdict(state: PortState, until: str | None = None) -> tuple[str, str]:
    """(status, reason): green only when every stage that ran passed and nothing stopped the run early;
    with `until`, green when every stage up to it passed."""
    if state.stop_reason:
        return "partial", state.stop_reason
    statuses = {s: state.stage(s).status for s in _ORDER}
    failed = [s for s, st in statuses.items() if st == "failed"]
    if failed == ["unit"]:
        units = state.stage("unit").detail
        return "partial", f"unit compiles: {units}; stopped there as asked (--until unit)"
    if failed:
        return "partial", f"{', '.join(failed)} failed"
    if until and until != "bench":
        stages = ("scan", "unit", "build", "load", "serve")
        asked = [s for s in _ORDER if s in stages[: stages.index(until) + 1]]
        if all(statuses[s] == "passed" for s in asked):
            return "green", f"green up to {until}, stopped there as asked (--until {until})"
        return "partial", f"stopped after {until} as asked (--until {until})"
    if statuses["build"] != "passed":
        return "partial", "the build never passed"
    not_run = [f"{s} {st}" for s, st in statuses.items() if st.startswith("not run")]
    if not_run:
        return "green", "green as far as this machine can check (" + "; ".join(not_run) + ")"
    return "green", "green: builds, loads, serves" + (
        ", benchmarked" if statuses["bench"] == "passed" else ""
    )


def write_state(state: PortState, env: RunEnv, extra: dict | None = None) -> None:
    """state.json in the run dir: what tools.report and tools.pr read (any run can be reported again)."""
    data = {**to_json(state), "gpu": env.gpu, **(extra or {})}
    (env.rundir.path / "state.json").write_text(json.dumps(data, indent=2, default=str))


def report(state: PortState, env: RunEnv) -> dict:
    """Write report.md/.html from the run dir, stop the server, record the run's final status."""
    from tools.report import RunView, render_markdown
    from tools.report_html import render_html

    if env.server is not None:
        env.server.stop()
        env.server = None
    status, reason = verdict(state, env.job.until)
    if state.stop_reason:
        env.observer.emit("stopped", reason=state.stop_reason)
    write_state(state, env, {"status": status, "stop_reason": reason})
    view = RunView.load(env.rundir.path)
    md = env.rundir.path / "report.md"
    md.write_text(render_markdown(view))
    (env.rundir.path / "report.html").write_text(render_html(view))
    env.observer.emit("report", path=str(md), status=status, reason=reason, counters=state.counters)
    return {"status": status, "stop_reason": reason, "report_path": str(md), "phase": "report"}
