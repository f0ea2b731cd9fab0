"""Single nodes invoked alone, routers, and a path through the graph with a fresh in-memory checkpointer."""

from __future__ import annotations

from pathlib import Path

import git
import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from agent.config import job_to_yaml, load_job
from agent.loop.graph import after_apply, after_diagnosis, build_graph
from agent.loop.nodes.apply_check import apply_check
from agent.loop.nodes.budget import stalled
from agent.loop.nodes.checkout import checkout
from agent.loop.nodes.env import RunEnv
from agent.loop.nodes.propose import propose
from agent.loop.observer import Observer
from agent.loop.rundir import RunDir
from agent.loop.state import PortState
from agent.profiles import load_profile
from agent.proposers.base import RulesProposer, llm_proposer_for
from agent.proposers.llm.model import ScriptedModel
from tests.agent.portfixture import FILES, header_failure, make_job
from tools.records import Failure

SPIN = """\
#ifdef USE_ROCM
#include <hip/hip_runtime.h>
#endif

__global__ void spin(int* flag) {
  while (atomicAdd(flag, 0) == 0) { __prof_trigger(0); }
}
"""


def make_env(tmp_path: Path, repo: Path, *overrides: str, model=None, review: bool = False) -> RunEnv:
    job = load_job(make_job(tmp_path, repo, *overrides))
    rundir = RunDir("t-run", home=tmp_path / "home")
    rundir.create(job_to_yaml(job))
    proposers = [RulesProposer()]
    if model is not None:
        proposers.append(llm_proposer_for(job.llm, model=model))
    return RunEnv(
        job=job,
        profile=load_profile(job.framework.profile),
        rundir=rundir,
        observer=Observer(rundir),
        proposers=proposers,
        review=review,
        gpu=False,
    )


def checked_out(env: RunEnv) -> PortState:
    state = PortState(run_id="t-run")
    update = checkout(state, env)
    return PortState(**{**state.__dict__, **update})


def test_routers_follow_the_stage_and_raise_on_the_unexpected():
    assert after_diagnosis(PortState(failure_stage="build")) == "load_check"
    assert after_diagnosis(PortState(failure_stage="load")) == "serve"
    assert after_diagnosis(PortState(failure_stage="build", failures=[Failure("cub", "m")])) == "propose"
    assert after_diagnosis(PortState(failure_stage="build", stop_reason="budget: x")) == "report"
    assert after_apply(PortState(failure_stage="serve")) == "load_check"
    with pytest.raises(ValueError, match="unexpected failure_stage"):
        after_diagnosis(PortState(failure_stage="moon"))


def test_stall_is_the_same_failures_twice_in_a_row():
    assert stalled([["a", "b"], ["a", "b"]]).startswith("stalled")
    assert stalled([["a", "b"], ["a"]]) == ""
    assert stalled([[], []]) == ""


def test_propose_alone_uses_rules_and_records_environment_failures(tmp_path, git_repo):
    env = make_env(tmp_path, git_repo(FILES))
    state = checked_out(env)
    header = header_failure("csrc/scale.cu")
    oom = {"kind": "resource", "message": "HIP out of memory", "signature": "resource:oom"}
    update = propose(
        PortState(**{**state.__dict__, "failures": [header, oom], "failure_stage": "build"}), env
    )
    assert [p.proposer for p in update["proposals"]] == ["rule:headers"]
    assert update["unfixable"][0]["signature"] == "resource:oom"
    assert "environment" in update["unfixable"][0]["reason"]
    assert update["iteration"] == 1


def test_a_patch_that_breaks_nvcc_is_reverted(tmp_path, git_repo, hipcc, nvcc):
    env = make_env(tmp_path, git_repo(FILES))
    state = checked_out(env)
    before = (Path(state.repo_dir) / "csrc/warp_reduce.cu").read_text()
    # Makes hipcc happy but changes the CUDA path: nvcc has no __shfl_xor without _sync any more.
    bad = (
        "diff --git a/csrc/warp_reduce.cu b/csrc/warp_reduce.cu\n--- a/csrc/warp_reduce.cu\n"
        "+++ b/csrc/warp_reduce.cu\n@@ -1,2 +1,3 @@\n-#include <cuda_runtime.h>\n"
        "+#include <hip/hip_runtime.h>\n+#define __shfl_xor_sync(mask, v, o) __shfl_xor(v, o)\n \n"
    )
    failure = {
        "kind": "warp_intrinsic",
        "message": "use of undeclared identifier '__shfl_xor_sync'",
        "file": "csrc/warp_reduce.cu",
        "line": 6,
        "symbol": "__shfl_xor_sync",
        "signature": "warp_intrinsic:csrc/warp_reduce.cu:__shfl_xor_sync",
        "facts": {"unit": "csrc/warp_reduce.cu"},
    }
    proposal = {
        "failure_signature": failure["signature"],
        "proposer": "llm:test",
        "diff": bad,
        "rationale": "shim",
        "files": ["csrc/warp_reduce.cu"],
        "kind": "warp_intrinsic",
        "failure": failure,
    }
    update = apply_check(
        PortState(
            **{**state.__dict__, "failures": [failure], "failure_stage": "build", "proposals": [proposal]}
        ),
        env,
    )
    [outcome] = update["outcomes"]
    assert not outcome.kept
    assert "nvcc" in outcome.reason or "CUDA" in outcome.reason
    assert (Path(state.repo_dir) / "csrc/warp_reduce.cu").read_text() == before
    assert update["head"] == state.head == git.Repo(state.repo_dir).head.commit.hexsha
    assert any(p.name.endswith("-reverted.patch") for p in env.rundir.patches.iterdir())


def _llm_fix_script() -> list:
    edit = {
        "path": "csrc/spin.cu",
        "search": "  while (atomicAdd(flag, 0) == 0) { __prof_trigger(0); }\n",
        "replace": "#ifdef USE_ROCM\n  while (atomicAdd(flag, 0) == 0) { __builtin_amdgcn_s_sleep(2); }\n"
        "#else\n  while (atomicAdd(flag, 0) == 0) { __prof_trigger(0); }\n#endif\n",
    }
    return [
        [("propose_edit", edit)],
        [("finish", {"rationale": "HIP has no __prof_trigger; a short sleep on ROCm"})],
    ]


def test_review_pauses_before_an_llm_patch_and_resumes(tmp_path, git_repo, hipcc, nvcc):
    repo = git_repo({"csrc/spin.cu": SPIN, "build.sh": FILES["build.sh"], ".gitignore": "build/\n"})
    env = make_env(tmp_path, repo, model=ScriptedModel(_llm_fix_script()), review=True)
    graph = build_graph(env, InMemorySaver())
    config = {"configurable": {"thread_id": "t-run"}}
    paused = graph.invoke(PortState(run_id="t-run"), config)
    [pending] = paused["__interrupt__"][0].value["review"]
    assert pending["proposer"] == "llm:scripted" and "__builtin_amdgcn_s_sleep" in pending["diff"]
    head_before = git.Repo(paused["repo_dir"]).head.commit.hexsha
    assert head_before == paused["base_commit"]  # nothing applied while paused
    done = graph.invoke(Command(resume=True), config)
    assert done["status"] == "green", done["stop_reason"]
    assert done["counters"]["builds"] == 2 and done["counters"]["tokens_in"] > 0
    [kept] = [o for o in done["outcomes"] if o.kept]
    assert kept.proposal.proposer == "llm:scripted"
    assert "s_sleep" in (Path(done["repo_dir"]) / "csrc/spin.cu").read_text()


def test_a_resumed_wave_reports_a_kept_patch_whose_event_a_kill_cut_off(tmp_path, git_repo):
    """Killed after a kept patch was journaled and committed but before its patch_kept event: the resumed wave
    reports it once (the events log says what the branch holds); a patch already reported is not reported again."""
    from agent.loop.journal import Entry, WaveJournal, wave_key
    from agent.loop.nodes.wave_record import resume_wave
    from agent.proposers.rules import file_diff
    from tools.git import commit_files
    from tools.records import PatchOutcome, Proposal

    env = make_env(tmp_path, git_repo(FILES))
    state = checked_out(env)
    repo = Path(state.repo_dir)
    journal = WaveJournal(tmp_path / "journal.jsonl")
    key = wave_key(1, state.head)
    for n, name in enumerate(("a.h", "b.h")):
        diff = file_diff(name, None, f"// {name}\n")
        proposal = Proposal(f"sig{n}", "rule:test", diff, "adds a header", [name])
        (repo / name).write_text(f"// {name}\n")
        commit_files(repo, [name], f"add {name}")
        outcome = PatchOutcome(proposal, applied=True, kept=True, reason="all checks passed")
        journal.record(Entry(key, n, outcome, kind="cuda_header", file=name, message=f"add {name}"))
    shas = git.Repo(repo).git.rev_list("--reverse", f"{state.head}..HEAD").split()
    env.observer.emit("patch_kept", proposer="rule:test", kind="cuda_header", file="a.h", commit=shas[0])
    wave = resume_wave(state, env, journal, key)
    events = [e for e in env.observer.events if e["event"] == "patch_kept"]
    assert [e["commit"] for e in events] == shas  # a.h's from before the kill, b.h's now
    assert len(wave.outcomes) == len(state.outcomes) + 2
