"""`rocport port` end to end on a small real repo with real faults, real hipcc/nvcc, real git, real SQLite."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import git
import pytest

from agent.config import load_job
from agent.loop.port import resume_port, start_port
from agent.loop.rundir import RunDir
from tests.agent.portfixture import FILES, HEADER_FAULTS, UNLISTED_FAULT, make_job

ROCPORT = [sys.executable, "-c", "from agent.cli import main; main()"]


@pytest.fixture
def home(tmp_path, monkeypatch):
    path = tmp_path / "home"
    monkeypatch.setenv("ROCPORT_HOME", str(path))
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    return path


def branch_commits(repo_dir: str, base: str) -> list[str]:
    repo = git.Repo(repo_dir)
    return [c.summary for c in repo.iter_commits(f"{base}..HEAD")]


def test_rules_only_run_reaches_green_in_one_build(home, tmp_path, git_repo, hipcc, nvcc):
    repo = git_repo(FILES)
    result = start_port(load_job(make_job(tmp_path, repo)))
    state = json.loads((home / "runs" / result.run_id / "state.json").read_text())
    assert result.status == "green", result.reason
    # The units the scan flags are compiled alone first; their errors start the wave, the masked warp
    # intrinsic is found by the unit compile of the header fix and fixed in the same wave, and the one
    # full build, after the wave, is green.
    assert result.counters["builds"] == 1
    order = [e["event"] for e in result.events if e["event"] in ("unit_compiled", "build_started")]
    assert order == ["unit_compiled", "unit_compiled", "build_started"], order
    assert result.counters["launches"] == 0 and result.counters["tokens_in"] == 0
    kinds = sorted(o["proposal"]["proposer"] for o in state["outcomes"] if o["kept"])
    assert kinds and all(k.startswith("rule:") for k in kinds)
    work = git.Repo(state["repo_dir"])
    assert work.active_branch.name == f"rocport/port-{result.run_id}"
    assert len(branch_commits(state["repo_dir"], state["base_commit"])) == len(kinds)
    fixed = (Path(state["repo_dir"]) / "csrc/warp_reduce.cu").read_text()
    assert "#include <cuda_runtime.h>" in fixed and "USE_ROCM" in fixed
    # The ROCm build is green for real, and nvcc still compiles the patched kernels.
    for unit in ("csrc/warp_reduce.cu", "csrc/scale.cu"):
        out = subprocess.run(
            ["nvcc", "-arch=sm_90", "-c", unit, "-o", "/dev/null"],
            cwd=state["repo_dir"],
            check=False,
            capture_output=True,
            text=True,
        )
        assert out.returncode == 0, out.stderr
    report = (home / "runs" / result.run_id / "report.md").read_text()
    assert "green" in report and "rule:" in report
    assert "rules-only" in " ".join(e.get("message", "") for e in result.events if e["event"] == "note")


def test_budget_of_one_build_stops_cleanly_with_a_partial_report(home, tmp_path, git_repo, hipcc, nvcc):
    # The unlisted unit's fault is seen only by the full build, so a second build would be needed.
    repo = git_repo(UNLISTED_FAULT)
    result = start_port(load_job(make_job(tmp_path, repo, "budgets.builds=1")))
    assert result.status == "partial"
    assert "budget" in result.reason and "build" in result.reason
    assert result.counters["builds"] == 1
    state = json.loads((home / "runs" / result.run_id / "state.json").read_text())
    fixed = {o["proposal"]["failure_signature"].split(":")[1] for o in state["outcomes"] if o["kept"]}
    assert fixed == {"csrc/scale.cu", "kernels/extra.cu"}  # both kept and committed before the stop
    assert len(branch_commits(state["repo_dir"], state["base_commit"])) == 2
    run = home / "runs" / result.run_id
    assert "budget" in (run / "report.md").read_text()
    rows = {r["run_id"]: r for r in _runs_json(home)}
    assert rows[result.run_id]["status"] == "partial"


def _runs_json(home: Path) -> list[dict]:
    import sqlite3

    with sqlite3.connect(home / "runs.sqlite") as db:
        return [{"run_id": r[0], "status": r[1]} for r in db.execute("SELECT run_id, status FROM runs")]


def _rocport(*args: str, env: dict) -> subprocess.Popen:
    return subprocess.Popen(
        [*ROCPORT, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )


def test_kill_9_mid_build_then_resume_does_not_redo_kept_patches(home, tmp_path, git_repo, hipcc, nvcc):
    repo = git_repo(HEADER_FAULTS)
    env = {**os.environ, "ROCPORT_HOME": str(home)}
    job = make_job(tmp_path, repo, build_sleep=4)
    proc = _rocport("port", *[a for s in job for a in ("-c", s)], "--json", env=env)
    run_id, kept_before = None, 0
    for line in proc.stdout:
        event = json.loads(line)
        run_id = event.get("run_id", run_id)
        kept_before += event["event"] == "patch_kept"
        if event["event"] == "build_started" and event["number"] == 1:
            time.sleep(1)  # the build after the first wave is running (sleeping inside build.sh)
            os.killpg(proc.pid, signal.SIGKILL)
            break
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL and run_id and kept_before >= 1
    resumed = subprocess.run(
        [*ROCPORT, "port", "--resume", run_id, "--json"],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    events = [json.loads(ln) for ln in resumed.stdout.splitlines() if ln.startswith("{")]
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert not [e for e in events if e["event"] in ("patch_kept", "proposed")]  # nothing redone
    assert [e["number"] for e in events if e["event"] == "build_started"] == [1]
    state = json.loads((home / "runs" / run_id / "state.json").read_text())
    assert state["status"] == "green"
    summaries = branch_commits(state["repo_dir"], state["base_commit"])
    assert len(summaries) == kept_before == len(set(summaries))
    listed = subprocess.run([*ROCPORT, "runs"], check=False, capture_output=True, text=True, env=env)
    assert run_id in listed.stdout and "green" in listed.stdout


def test_resume_of_an_unknown_run_is_a_one_line_error(home):
    out = subprocess.run(
        [*ROCPORT, "port", "--resume", "nope-123"],
        check=False,
        capture_output=True,
        text=True,
        env={**os.environ, "ROCPORT_HOME": str(home)},
    )
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and "no run 'nope-123'" in out.stderr


def test_bad_job_is_a_one_line_error(home, tmp_path):
    out = subprocess.run(
        [*ROCPORT, "port", "-c", "framework.profile=tinykernels", "-c", "budgets.bulids=2"],
        check=False,
        capture_output=True,
        text=True,
        env={**os.environ, "ROCPORT_HOME": str(home)},
    )
    assert out.returncode == 2 and "unknown key budgets.bulids" in out.stderr and out.stderr.count("\n") == 1


def test_resume_finished_run_reports_it_again(home, tmp_path, git_repo, hipcc, nvcc):
    repo = git_repo(HEADER_FAULTS)
    first = start_port(load_job(make_job(tmp_path, repo, "budgets.builds=1")))
    again = resume_port(first.run_id)
    assert again.status == first.status and again.counters["builds"] == 1


def test_resume_clears_the_git_locks_a_killed_run_left_in_its_clone(home, tmp_path, git_repo, hipcc, nvcc):
    """A kill -9 inside `git reset`/`git commit` leaves .git/index.lock (or a ref's .lock); every git
    command of the resumed run would then fail. The resumed run holds the run lock, so they are stale."""
    repo = git_repo(HEADER_FAULTS)
    first = start_port(load_job(make_job(tmp_path, repo, "budgets.builds=1")))
    clone = RunDir(first.run_id).repo
    (clone / ".git" / "index.lock").write_text("")
    (clone / ".git" / "refs" / "heads" / "main.lock").write_text("")
    again = resume_port(first.run_id)
    assert again.status == first.status
    assert (
        not (clone / ".git" / "index.lock").exists()
        and not (clone / ".git" / "refs" / "heads" / "main.lock").exists()
    )
    subprocess.run(["git", "-C", str(clone), "reset", "-q", "--hard"], check=True)  # git works in it again
    events = (RunDir(first.run_id).path / "events.jsonl").read_text()
    assert "removed git lock(s) the killed run left in its clone: index.lock, refs/heads/main.lock" in events


def test_flagship_glm52_port_in_the_rocm_container_is_green_in_one_build_and_one_launch(
    home, tmp_path, rocm_image, nvcc
):
    """The GLM-5.2 port (evals/tasks/glm52_mi355x): CUDA-only headers in a fused kernel, and the MTP
    head's shared experts misnamed in both the weight names and the quant exclusions, on gfx950."""
    from evals.taskdefs import load_task, materialize

    task = load_task("glm52_mi355x")
    repo = materialize(task, tmp_path / "repo")
    subprocess.run(
        [sys.executable, "-m", "tinyserve.make_checkpoint", "--out", str(tmp_path / "model")],
        cwd=repo,
        check=True,
        capture_output=True,
    )
    job = tmp_path / "job.yaml"
    job.write_text(
        f"framework: {{profile: tinyserve, repo: {repo}}}\nmodel: {{path: {tmp_path / 'model'}}}\n"
        f"target: {{arch: {task.target_arch}, image: {rocm_image}}}\n"
        "bench: {isl: 320, osl: 16, num_prompts: 16, max_concurrency: 4, cache_hit_rate: 0.6}\n"
    )
    result = start_port(load_job([str(job)]))
    assert result.status == "green", result.reason
    c = result.counters
    # The scan-flagged kernel is fixed from its own unit compile, so the one full build comes after the
    # only compile wave; the load faults are caught by the cheap load check, so the server is launched
    # exactly once; rules only, so no LLM tokens.
    assert (c["builds"], c["launches"], c["tokens_in"] + c["tokens_out"]) == (1, 1, 0)
    state = json.loads((home / "runs" / result.run_id / "state.json").read_text())
    kept = {o["proposal"]["proposer"] for o in state["outcomes"] if o["kept"]}
    assert {"rule:headers", "rule:weight_names", "rule:quant_exclusion"} <= kept
    assert state["bench"]["valid"] and abs(state["bench"]["cache"]["hit_rate"] - 0.6) <= 0.02
    assert state["stages"]["serve"]["status"] == "passed"
    assert len(branch_commits(state["repo_dir"], state["base_commit"])) == len(kept)
    assert "## Benchmark" in (home / "runs" / result.run_id / "report.md").read_text()


def test_unknown_ref_is_a_one_line_error_and_the_run_is_marked_failed(home, tmp_path, git_repo):
    repo = git_repo(HEADER_FAULTS)
    args = [a for s in make_job(tmp_path, repo, "framework.ref=no-such-branch") for a in ("-c", s)]
    out = subprocess.run(
        [*ROCPORT, "port", *args],
        check=False,
        capture_output=True,
        text=True,
        env={**os.environ, "ROCPORT_HOME": str(home)},
    )
    assert out.returncode == 2 and out.stderr.count("\n") == 1
    assert "ref 'no-such-branch' not found" in out.stderr
    assert [r["status"] for r in _runs_json(home)] == ["failed"]
