"""Nodes invoked alone: GPU-only stages are 'not run: no GPU' (never passed), LLM budgets, the report verdict."""

from __future__ import annotations

import io
import json

from agent.loop.nodes.load_check import load_check
from agent.loop.nodes.propose import propose
from agent.loop.nodes.report import report, verdict
from agent.loop.nodes.serve import serve
from agent.loop.observer import JsonlSink, Observer
from agent.loop.state import PortState, StageResult, zero_counters
from agent.proposers.llm.model import ScriptedModel
from tests.agent.portfixture import HEADER_FAULTS
from tests.agent.test_graph import checked_out, make_env

SPIN_FAILURE = {
    "kind": "warp_intrinsic",
    "message": "use of undeclared identifier '__nanosleep'",
    "file": "csrc/spin.cu",
    "line": 6,
    "symbol": "__nanosleep",
    "signature": "warp_intrinsic:csrc/spin.cu:__nanosleep",
    "facts": {"unit": "csrc/spin.cu"},
}


def test_gpu_stages_are_not_run_without_a_gpu(tmp_path, git_repo):
    model = tmp_path / "model"
    model.mkdir()
    env = make_env(tmp_path, git_repo(HEADER_FAULTS), f"model.path={model}")
    launch = env.profile.launch.model_copy(
        update={"command": "serve --model-path {model_path} --tp {tp} --port {port}"}
    )
    env.profile = env.profile.model_copy(
        update={"serve_needs_gpu": True, "launch": launch, "load_check": "python3 -c 'raise SystemExit(1)'"}
    )
    state = checked_out(env)
    state.stages = {"build": StageResult("passed")}
    loaded = load_check(state, env)
    assert loaded["stages"]["load"].status == "not run: no GPU" and loaded["failures"] == []
    state.stages = loaded["stages"]
    served = serve(state, env)
    assert served["stages"]["serve"].status == "not run: no GPU"
    assert str(model) in served["stages"]["serve"].detail  # says what would have run
    assert served.get("counters", state.counters)["launches"] == 0
    state.stages = served["stages"]
    status, reason = verdict(state)
    assert status == "green" and "not run: no GPU" in reason and "as far as this machine can check" in reason


def test_llm_is_not_asked_once_the_token_budget_is_spent(tmp_path, git_repo):
    model = ScriptedModel([])  # would raise if it were asked
    env = make_env(tmp_path, git_repo(HEADER_FAULTS), "budgets.llm_tokens=100", model=model)
    state = checked_out(env)
    counters = {**zero_counters(), "tokens_in": 90, "tokens_out": 20, "llm_calls": 3}
    update = propose(
        PortState(
            **{
                **state.__dict__,
                "failures": [SPIN_FAILURE],
                "failure_stage": "build",
                "stages": {"build": StageResult("failed")},  # the full build found it (not the first wave)
                "counters": counters,
            }
        ),
        env,
    )
    assert update["proposals"] == [] and model.seen == []
    assert "100 LLM tokens" in update["unfixable"][0]["reason"]
    assert update["stop_reason"].startswith("no fix proposed")


def test_llm_tokens_are_counted_and_a_decline_is_recorded(tmp_path, git_repo):
    model = ScriptedModel([[("decline", {"reason": "needs a hardware-specific sleep; ask a human"})]])
    env = make_env(tmp_path, git_repo(HEADER_FAULTS), model=model)
    state = checked_out(env)
    update = propose(
        PortState(**{**state.__dict__, "failures": [SPIN_FAILURE], "failure_stage": "build"}), env
    )
    assert update["counters"]["llm_calls"] == 1 and update["counters"]["tokens_in"] > 0
    assert update["counters"]["cost_usd"] is None  # no pricing configured: unknown, never guessed
    assert "ask a human" in update["unfixable"][0]["reason"]


def test_report_writes_markdown_html_and_state_and_stops_with_the_reason(tmp_path, git_repo):
    env = make_env(tmp_path, git_repo(HEADER_FAULTS))
    stream = io.StringIO()
    env.observer = Observer(env.rundir, [JsonlSink(stream)])
    state = checked_out(env)
    state.stop_reason = "budget: 1 build(s) used up before the rebuild"
    state.stages = {"build": StageResult("failed", "build #1, exit 1")}
    update = report(state, env)
    assert update["status"] == "partial"
    saved = json.loads((env.rundir.path / "state.json").read_text())
    assert saved["status"] == "partial" and saved["stop_reason"].startswith("budget")
    assert "budget: 1 build(s)" in (env.rundir.path / "report.md").read_text()
    assert (env.rundir.path / "report.html").is_file()
    events = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [e["event"] for e in events][-2:] == ["stopped", "report"]
    on_disk = [json.loads(line) for line in env.rundir.events.read_text().splitlines()]
    assert [e["event"] for e in on_disk][-2:] == ["stopped", "report"]
