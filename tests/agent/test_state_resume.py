"""Typed run state: a checkpoint saved before the state was typed (failures, proposals, outcomes and stages
as dicts) still resumes, and state.json keeps its JSON shape."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from agent.loop.graph import build_graph
from agent.loop.nodes.propose import propose
from agent.loop.state import PortState, StageResult
from agent.loop.store import open_checkpointer
from tests.agent.portfixture import HEADER_FAULTS, header_failure
from tests.agent.test_graph import checked_out, make_env
from tools import git as gitops
from tools.records import Failure, PatchOutcome, Proposal

HEADER = header_failure("csrc/scale.cu")


def _old_checkpoint(state: PortState, proposal: Proposal) -> dict:
    """The channel values rocport wrote after `propose` while the run state was dicts."""
    old_proposal = {k: v for k, v in proposal.to_dict().items() if k != "failure"}
    rejected = {**old_proposal, "proposer": "llm:earlier", "diff": "--- a/x\n+++ b/x\n"}
    return {
        **{
            k: v for k, v in asdict(state).items() if k not in ("stages", "failures", "outcomes", "proposals")
        },
        "failures": [HEADER],
        "failure_stage": "build",
        "proposals": [old_proposal | {"kind": HEADER["kind"], "failure": HEADER}],
        "outcomes": [
            {
                "proposal": rejected,
                "applied": False,
                "checks": [{"name": "hipcc gfx90a csrc/scale.cu", "ok": False, "detail": "x", "cmd": ""}],
                "kept": False,
                "reason": "an earlier try",
                "commit": None,
            }
        ],
        "stages": {
            "build": {"status": "failed", "detail": "build #1, exit 1", "log": "logs/001-build-1.log"}
        },
        "known_failures": {HEADER["signature"]: HEADER},
        "iteration": 1,
    }


def test_a_checkpoint_with_dict_records_resumes_typed(tmp_path, git_repo, hipcc, nvcc):
    env = make_env(tmp_path, git_repo(HEADER_FAULTS))
    state = checked_out(env)
    typed = PortState(**{**state.__dict__, "failures": [HEADER], "failure_stage": "build"})
    [proposal] = propose(typed, env)["proposals"]
    saver = open_checkpointer(tmp_path / "home")
    graph = build_graph(env, saver)
    config = {"configurable": {"thread_id": "t-run"}}
    graph.update_state(config, _old_checkpoint(state, proposal), as_node="propose")
    saved = saver.get_tuple(config).checkpoint["channel_values"]
    assert isinstance(saved["proposals"][0], dict) and isinstance(saved["stages"]["build"], dict)

    graph.invoke(None, config, interrupt_after=["apply_check"])
    values = graph.get_state(config).values
    earlier, kept = values["outcomes"]
    assert isinstance(earlier, PatchOutcome) and earlier.reason == "an earlier try"
    assert isinstance(kept, PatchOutcome) and kept.kept, kept.reason
    assert kept.proposal.failure == Failure.from_dict(HEADER)
    assert gitops.head(Path(state.repo_dir)) == kept.commit == values["head"]
    # channels apply_check did not write still hold the old dicts: every node (and the driver's RunRecord)
    # reads them through PortState
    resumed = PortState(**values)
    assert resumed.stages["build"] == StageResult("failed", "build #1, exit 1", "logs/001-build-1.log")
    assert all(isinstance(f, Failure) for f in resumed.known_failures.values())
    # the checkpoint now holds records; a fresh process reads them back through the same allow-list
    again = open_checkpointer(tmp_path / "home").get_tuple(config).checkpoint["channel_values"]
    assert isinstance(again["outcomes"][1], PatchOutcome)
    # state.json, what reports and PRs read, keeps the flat JSON shape
    written = json.loads((env.rundir.path / "state.json").read_text())
    assert written["stages"]["build"] == {
        "status": "failed",
        "detail": "build #1, exit 1",
        "log": "logs/001-build-1.log",
    }
    assert (
        written["outcomes"][1]["kept"]
        and written["outcomes"][1]["proposal"]["failure"]["kind"] == "cuda_header"
    )
