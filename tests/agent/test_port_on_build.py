"""A run on another run's build (`start_port(job, built=record)`), as a sweep's later cells of one build
group run: it enters the port graph at the load check on the built clone, loads, serves and benchmarks
its own model there with its own run dir, report and counters, and never clones or rebuilds.

The framework is the tinyserve fixture (CPU server, numpy model) in the local sandbox; its build is
replaced by a marker file, so a rebuild would show as a second marker line.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import git
import pytest
import yaml

from agent.config import load_job
from agent.loop.port import PortError, RunRecord, start_port
from agent.sweep.cell_runner import first_record
from evals.taskdefs import copy_framework

TINYSERVE = Path(__file__).resolve().parents[2] / "agent" / "profiles" / "tinyserve.yaml"


@pytest.fixture
def home(tmp_path, monkeypatch):
    path = tmp_path / "home"
    monkeypatch.setenv("ROCPORT_HOME", str(path))
    return path


@pytest.fixture
def group(tmp_path) -> dict[str, Path]:
    """tinyserve as a git repo, a profile whose build writes one line to built.txt, two checkpoints."""
    repo = copy_framework("tinyserve", tmp_path / "tinyserve")
    repo.joinpath(".gitignore").write_text("built.txt\n")
    git.Repo.init(repo, initial_branch="main")
    git.Repo(repo).git.add("-A")
    git.Repo(repo).git.commit("-qm", "tinyserve", author="t <t@example.com>")
    for name, extra in (("model-a", []), ("model-b", ["--seed", "7"])):
        subprocess.run(
            [sys.executable, "-m", "tinyserve.make_checkpoint", "--out", str(tmp_path / name), *extra],
            cwd=repo,
            check=True,
            capture_output=True,
        )
    profile = yaml.safe_load(TINYSERVE.read_text())
    profile["name"] = "tinyserve-marked"
    profile["build"] = {"rocm": "echo built >> built.txt", "timeout_s": 60}
    profile.pop("tune", None)
    (tmp_path / "profile.yaml").write_text(yaml.safe_dump(profile))
    return {"root": tmp_path, "repo": repo, "profile": tmp_path / "profile.yaml"}


def job(group: dict[str, Path], model: str, strategy: str) -> list[str]:
    path = group["root"] / f"job-{model}.yaml"
    path.write_text(
        f"framework: {{profile: {group['profile']}, repo: {group['repo']}}}\n"
        f"model: {{path: {group['root'] / model}}}\ntarget: {{arch: gfx90a}}\n"
        f"sandbox: {{backend: local}}\nstrategy: {strategy}\n"
        "bench: {isl: 16, osl: 4, num_prompts: 4, max_concurrency: 2}\n"
    )
    return [str(path)]


def test_a_run_on_a_build_loads_serves_and_benchmarks_without_a_rebuild(home, group):
    first = start_port(load_job(job(group, "model-a", "none")))
    assert first.status == "green", first.reason
    clone = Path(first.state["repo_dir"])
    assert (clone / "built.txt").read_text() == "built\n"

    later = start_port(load_job(job(group, "model-b", "none")), built=first)

    assert later.status == "green", later.reason
    assert later.run_id != first.run_id
    # the graph ran from the load check on the first run's clone: nothing cloned, nothing rebuilt
    phases = [e["phase"] for e in later.events if e["event"] == "phase"]
    assert phases == ["load_check", "serve", "bench", "report"]
    assert (clone / "built.txt").read_text() == "built\n"
    assert not (home / "runs" / later.run_id / "repo").exists()
    assert later.counters["builds"] == 0
    assert later.counters["load_checks"] == 1 and later.counters["launches"] == 1
    state = later.state
    assert state["repo_dir"] == str(clone)
    assert (state["base_commit"], state["head"]) == (first.state["base_commit"], first.state["head"])
    assert state["stages"]["build"]["status"] == "passed"
    assert [state["stages"][s]["status"] for s in ("load", "serve", "bench")] == ["passed"] * 3
    assert state["bench"]["output_throughput"] > 0
    # its own run dir: report, the load check's and the server's logs, this model's benchmark
    report = Path(later.report_path).read_text()
    assert later.report_path.startswith(str(home / "runs" / later.run_id)) and "green" in report
    assert str(group["root"] / "model-b") in (home / "runs" / later.run_id / "job.yaml").read_text()
    assert any("load-check" in p.name for p in (home / "runs" / later.run_id / "logs").iterdir())


def test_a_run_on_a_build_refuses_proposers_and_a_failed_build(home, group):
    built = RunRecord(
        "r1",
        "green",
        state={
            "repo_dir": str(group["repo"]),
            "base_commit": "abc",
            "stages": {"build": {"status": "passed"}},
        },
    )
    with pytest.raises(PortError, match="use strategy none"):
        start_port(load_job(job(group, "model-b", "rules")), built=built)
    failed = RunRecord("r2", "partial", state={**built.state, "stages": {"build": {"status": "failed"}}})
    with pytest.raises(PortError, match="run r2 has no passed build to run on"):
        start_port(load_job(job(group, "model-b", "none")), built=failed)
    assert not (home / "runs").exists() or not list((home / "runs").iterdir())


def test_a_group_run_file_of_an_older_sweep_still_names_the_build(group):
    """A night killed before this version wrote a summary as group-run.json; resumed, it still works."""
    head = git.Repo(group["repo"]).head.commit.hexsha
    old = {"run_id": "r1", "repo_dir": str(group["repo"]), "built": True, "state_base": head}
    record = first_record(json.loads(json.dumps(old)))
    assert record.state["head"] == head and record.state["stages"]["build"]["status"] == "passed"
    assert first_record({**old, "built": False}).state["stages"]["build"]["status"] == "failed"
