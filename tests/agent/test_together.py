"""A wave's proposals on different units are validated together: one compile round, one commit each."""

from __future__ import annotations

import json
from pathlib import Path

import git

from agent.loop.nodes.apply_check import apply_check
from agent.loop.state import PortState
from agent.proposers.rules import file_diff
from tests.agent.portfixture import FILES
from tests.agent.test_graph import checked_out, make_env

KERNEL = "#include <cuda_runtime.h>\n\n__global__ void k_{name}(float* x) {{ x[threadIdx.x] *= 2.0f; }}\n"
GUARDED = "#ifdef USE_ROCM\n#include <hip/hip_runtime.h>\n#else\n#include <cuda_runtime.h>\n#endif\n"
UNITS = ("a", "b", "c")


def _proposal(name: str, new_include: str) -> dict:
    rel = f"csrc/{name}.cu"
    old = KERNEL.format(name=name)
    failure = {
        "kind": "cuda_header",
        "message": "'cuda_runtime.h' file not found",
        "file": rel,
        "line": 1,
        "symbol": "cuda_runtime.h",
        "signature": f"cuda_header:{rel}:cuda_runtime.h",
        "facts": {"unit": rel},
    }
    return {
        "failure_signature": failure["signature"],
        "proposer": "llm:test",
        "diff": file_diff(rel, old, old.replace("#include <cuda_runtime.h>\n", new_include)),
        "rationale": "guard the CUDA header",
        "files": [rel],
        "kind": "cuda_header",
        "failure": failure,
    }


def test_disjoint_proposals_compile_in_one_round_and_a_bad_one_does_not_sink_the_rest(
    tmp_path: Path, git_repo, hipcc, nvcc
):
    files = {k: v for k, v in FILES.items() if not k.startswith("csrc/")}
    files.update({f"csrc/{n}.cu": KERNEL.format(name=n) for n in UNITS})
    env = make_env(tmp_path, git_repo(files))
    state = checked_out(env)
    # a and b guard the header; c swaps it for HIP's unguarded: fine on ROCm, breaks the CUDA build
    proposals = [
        _proposal("a", GUARDED),
        _proposal("b", GUARDED),
        _proposal("c", "#include <hip/hip_runtime.h>\n"),
    ]
    wave = PortState(
        **{
            **state.__dict__,
            "failures": [p["failure"] for p in proposals],
            "failure_stage": "build",
            "proposals": proposals,
        }
    )
    update = apply_check(wave, env)

    outcomes = {o.proposal.files[0]: o for o in update["outcomes"]}
    assert outcomes["csrc/a.cu"].kept and outcomes["csrc/b.cu"].kept
    assert not outcomes["csrc/c.cu"].kept and "breaks the CUDA build" in outcomes["csrc/c.cu"].reason
    # one round: every unit of the wave went to hipcc before any result was read, then nvcc's; a and b
    # only move the CUDA include into an `#else` branch, which the source text proves, so nvcc never runs
    # for them (c's unguarded swap needs nvcc, and fails there)
    compiles = sorted(p.name.split("-", 1)[1] for p in env.rundir.logs.glob("*.log"))
    first = [p.name.split("-", 1)[1] for p in sorted(env.rundir.logs.glob("*.log"))][:4]
    assert first == [*(f"hipcc-{n}.cu.log" for n in UNITS), "nvcc-c.cu.log"], compiles
    assert not [c for c in compiles if c in ("nvcc-a.cu.log", "nvcc-b.cu.log")], compiles
    # c was checked alone again after the group (its own verdict, its own compiles counted)
    assert update["counters"]["unit_compiles"] == 8
    notes = [json.loads(line) for line in env.rundir.events.read_text().splitlines()]
    assert any("3 proposals touch different units" in e.get("message", "") for e in notes)
    # one commit per kept proposal, each with its own file and only its own unit's evidence
    commits = list(git.Repo(state.repo_dir).iter_commits(f"{state.head}..HEAD"))
    assert sorted(list(c.stats.files) for c in commits) == [["csrc/a.cu"], ["csrc/b.cu"]]
    for commit in commits:
        [mine] = commit.stats.files
        other = "csrc/b.cu" if mine == "csrc/a.cu" else "csrc/a.cu"
        assert f"hipcc gfx90a {mine}" in commit.message and other not in commit.message
    assert (Path(state.repo_dir) / "csrc/c.cu").read_text() == KERNEL.format(name="c")


def test_a_kill_between_the_group_commits_redoes_no_check(tmp_path: Path, git_repo, hipcc, nvcc):
    """Every verdict of the group is journaled before its first commit: a run killed right after that
    commit commits the rest from the journal on resume and compiles nothing again."""
    from agent.loop.journal import WaveJournal, wave_key

    files = {k: v for k, v in FILES.items() if not k.startswith("csrc/")}
    files.update({f"csrc/{n}.cu": KERNEL.format(name=n) for n in UNITS[:2]})
    env = make_env(tmp_path, git_repo(files))
    state = checked_out(env)
    proposals = [_proposal("a", GUARDED), _proposal("b", GUARDED)]
    wave = PortState(
        **{
            **state.__dict__,
            "failures": [p["failure"] for p in proposals],
            "failure_stage": "build",
            "proposals": proposals,
        }
    )
    journal = env.rundir.path / "journal.jsonl"
    at_first_commit: list[str] = []

    def snapshot(event: dict) -> None:
        if event["event"] == "patch_kept" and not at_first_commit:
            at_first_commit.extend(journal.read_text().splitlines())

    env.observer.sinks.append(snapshot)
    first = apply_check(wave, env)
    assert first["counters"]["unit_compiles"] == 4
    assert len(at_first_commit) == 2  # both verdicts on disk when the first patch was committed

    # the kill, right there: one commit made, the journal as it was, the second patch's edit lost
    repo = git.Repo(state.repo_dir)
    first_commit = list(repo.iter_commits(f"{state.head}..HEAD"))[-1]
    repo.git.reset("--hard", first_commit.hexsha)
    journal.write_text("\n".join(at_first_commit) + "\n")
    assert len(WaveJournal(journal).entries(wave_key(wave.iteration, wave.head))) == 2
    logs = sorted(env.rundir.logs.glob("*.log"))

    resumed = apply_check(wave, env)  # the resumed process: same run dir and journal
    assert resumed["counters"]["unit_compiles"] == 4  # counted once, compiled once
    assert sorted(env.rundir.logs.glob("*.log")) == logs
    commits = list(repo.iter_commits(f"{state.head}..HEAD"))
    assert sorted(list(c.stats.files) for c in commits) == [["csrc/a.cu"], ["csrc/b.cu"]]
    assert [o.commit for o in resumed["outcomes"] if o.kept] == [c.hexsha for c in reversed(commits)]


def test_a_proposal_checked_after_the_group_starts_from_texts_made_during_its_round(
    tmp_path: Path, git_repo, hipcc, nvcc
):
    """A header proposal shares units with the group, so it is checked alone afterwards. The CUDA -E texts
    its proof starts from ("before": the header and both includers) are made while the group's units
    compile, and its check reads them from the memo instead of running nvcc -E on them again."""
    from agent.patch.preprocessed import MEMO

    compat = "#pragma once\n#define SCALE 2.0f\n"
    files = {k: v for k, v in FILES.items() if not k.startswith("csrc/")}
    files["csrc/compat.h"] = compat
    files.update({f"csrc/{n}.cu": '#include "compat.h"\n' + KERNEL.format(name=n) for n in UNITS[:2]})
    env = make_env(tmp_path, git_repo(files))
    state = checked_out(env)
    proposals = []
    for name in UNITS[:2]:
        p = _proposal(name, GUARDED)
        old = '#include "compat.h"\n' + KERNEL.format(name=name)
        p["diff"] = file_diff(f"csrc/{name}.cu", old, old.replace("#include <cuda_runtime.h>\n", GUARDED))
        proposals.append(p)
    # a CUDA-visible line in the shared header (a new macro name: allowed): the source text alone cannot
    # prove it, so its check preprocesses the header and the units that include it, before and after
    header = _proposal("a", GUARDED)
    header.update(
        diff=file_diff("csrc/compat.h", compat, compat + "#define SCALE_TWICE (SCALE * 2.0f)\n"),
        files=["csrc/compat.h"],
        rationale="a helper macro",
    )
    proposals.append(header)
    wave = PortState(
        **{
            **state.__dict__,
            "failures": [p["failure"] for p in proposals[:2]],
            "failure_stage": "build",
            "proposals": proposals,
        }
    )
    hits = MEMO.hits
    update = apply_check(wave, env)

    kept = [o.proposal.files for o in update["outcomes"] if o.kept]
    assert sorted(kept) == [["csrc/a.cu"], ["csrc/b.cu"], ["csrc/compat.h"]], update["outcomes"]
    header_checks = next(o for o in update["outcomes"] if o.proposal.files == ["csrc/compat.h"]).checks
    assert any(c.name == "cuda -E identity csrc/compat.h" and c.ok for c in header_checks), header_checks
    # its three "before" texts (compat.h, a.cu, b.cu) came from the group's round
    assert MEMO.hits - hits >= 3
