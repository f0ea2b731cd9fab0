"""kill -9 at every phase of a real `rocport port`, then `--resume`: the same branch, a benchmark, no work redone.

One run is driven through every phase (checkout, the first wave's unit compiles, the header patches'
checks, build, load check, apply, serve, bench) and killed with SIGKILL (its whole process group) in
each of them, resumed each time, and compared with an uninterrupted run of the same job: identical fix
commits, each kept patch committed exactly once, the same counts of builds, unit compiles and load
checks, and a valid benchmark at the end.

The fixture is the tinyserve weight-name task (a load fault; the CPU server and the benchmark run on
the host) plus two CUDA-first kernels in kernels/ (header faults for host hipcc and nvcc).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import git
import pytest
import yaml

from agent.config import load_job
from agent.loop.port import start_port
from tests.agent.portfixture import BUILD_SH, PROFILE, SCALE

pytestmark = pytest.mark.slow  # long end-to-end runs: started first in a parallel run

ROCPORT = [sys.executable, "-c", "from agent.cli import main; main()"]
TINYSERVE = Path(__file__).resolve().parents[2] / "agent" / "profiles" / "tinyserve.yaml"


@pytest.fixture(scope="module")
def fixture_job(tmp_path_factory, hipcc, nvcc) -> Path:
    """The repo (tinyserve with its weight-name fault + the kernels), its checkpoint, profile and job."""
    from evals.taskdefs import load_task, materialize

    root = tmp_path_factory.mktemp("kill9")
    repo = materialize(load_task("weight_name_mtp_shared_experts"), root / "repo")
    (repo / "kernels").mkdir()
    (repo / "kernels" / "scale.cu").write_text(SCALE)  # two CUDA-header faults: one wave of two patches
    (repo / "kernels" / "scale_twice.cu").write_text(
        SCALE.replace("scale(", "scale_twice(").replace("* s", "* s * s")
    )
    (repo / "build_kernels.sh").write_text(BUILD_SH.replace("csrc", "kernels"))
    git.Repo(repo).git.add("-A")
    git.Repo(repo).git.commit("-qm", "kernels", author="t <t@example.com>")
    subprocess.run(
        [sys.executable, "-m", "tinyserve.make_checkpoint", "--out", str(root / "model")],
        cwd=repo,
        check=True,
        capture_output=True,
    )
    tinyserve = yaml.safe_load(TINYSERVE.read_text())
    profile = yaml.safe_load(PROFILE.replace("csrc", "kernels").replace("build.sh", "build_kernels.sh"))
    profile["name"] = "tinyserve-kernels"
    for key in ("launch", "expected_params", "load_check", "model_loaders", "quant_configs", "env"):
        profile[key] = tinyserve[key]
    # Each build sleeps long enough to be killed in; the profile's env is the only way in (allow-list).
    profile["env"] = {**profile["env"], "BUILD_SLEEP": "3"}
    (root / "profile.yaml").write_text(yaml.safe_dump(profile))
    job = root / "job.yaml"
    job.write_text(
        f"framework: {{profile: {root / 'profile.yaml'}, repo: {repo}}}\n"
        f"model: {{path: {root / 'model'}}}\ntarget: {{arch: gfx90a}}\nsandbox: {{backend: local}}\n"
        "budgets: {launches: 3}\n"
        "bench: {isl: 64, osl: 32, num_prompts: 48, max_concurrency: 2}\n"
    )
    return job


def _fix_commits(state: dict) -> list[str]:
    repo = git.Repo(state["repo_dir"])
    return [c.summary for c in repo.iter_commits(f"{state['base_commit']}..HEAD")]


def _tree_diff(state: dict) -> str:
    return git.Repo(state["repo_dir"]).git.diff(state["base_commit"], "HEAD")


KillAt = Callable[[dict, list[dict]], float | None]
"""Given the next event and those before it: seconds to wait before the kill, or None to go on."""

PHASES: list[tuple[str, KillAt]] = [
    ("checkout", lambda e, seen: 0.0 if e.get("phase") == "checkout" else None),
    # the first wave, before any build: the scan-flagged kernels compiled one after the other
    ("first wave", lambda e, seen: 0.1 if e["event"] == "unit_compiled" else None),
    ("unit compile", lambda e, seen: 0.5 if e.get("phase") == "apply_check" else None),  # the header patches
    ("build", lambda e, seen: 1.0 if e["event"] == "build_started" else None),
    ("load check", lambda e, seen: 0.5 if e.get("phase") == "load_check" else None),
    ("apply", lambda e, seen: 0.3 if e.get("phase") == "apply_check" else None),  # the load-side patch
    ("serve", lambda e, seen: 0.5 if e["event"] == "serve_started" else None),
    ("bench", lambda e, seen: 0.3 if e.get("phase") == "bench" else None),
]


def _kill_during(args: list[str], env: dict, phase: str, kill_at: KillAt, errlog: Path) -> str:
    """Run `rocport port ARGS --json`, SIGKILL its process group in `phase`; returns the run id."""
    with errlog.open("a") as err:
        proc = subprocess.Popen(
            [*ROCPORT, "port", *args, "--json"],
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            env=env,
            start_new_session=True,
        )
    run_id, seen = "", []
    for line in proc.stdout:
        event = json.loads(line)
        run_id = event.get("run_id", run_id)
        delay = kill_at(event, seen)
        seen.append(event)
        if delay is not None:
            time.sleep(delay)
            os.killpg(proc.pid, signal.SIGKILL)
            break
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL, (
        f"the run ended before it reached {phase}: {errlog.read_text()[-800:]}"
    )
    return run_id


def _servers_of(model: str) -> list[int]:
    pids = []
    for name in os.listdir("/proc"):
        try:
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if "tinyserve.launch_server" in cmdline and model in cmdline:
            pids.append(int(name))
    return pids


def test_kill_9_at_every_phase_then_resume_gives_the_same_branch_and_a_benchmark(
    fixture_job, tmp_path, monkeypatch
):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("ROCPORT_HOME", str(tmp_path / "reference"))
    reference = start_port(load_job([str(fixture_job)]))
    assert reference.status == "green", reference.reason
    ref_state = json.loads((tmp_path / "reference" / "runs" / reference.run_id / "state.json").read_text())

    home = tmp_path / "home"
    env = {**os.environ, "ROCPORT_HOME": str(home)}
    errlog = tmp_path / "stderr.log"
    run_id = _kill_during(["-c", str(fixture_job)], env, *PHASES[0], errlog)
    for phase, kill_at in PHASES[1:]:
        assert _kill_during(["--resume", run_id], env, phase, kill_at, errlog) == run_id
    final = subprocess.run(
        [*ROCPORT, "port", "--resume", run_id, "--json"],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert final.returncode == 0, final.stderr[-2000:]

    run = home / "runs" / run_id
    state = json.loads((run / "state.json").read_text())
    assert state["status"] == "green", state["stop_reason"]
    assert state["stages"]["bench"]["status"] == "passed" and state["bench"]["valid"]
    # The same branch: the same fix commits, each exactly once, and the same patched tree.
    commits = _fix_commits(state)
    kept = [o for o in state["outcomes"] if o["kept"]]
    assert len(commits) == len(set(commits)) == len(kept) >= 3
    assert sorted(commits) == sorted(_fix_commits(ref_state))
    assert _tree_diff(state) == _tree_diff(ref_state)
    events = [json.loads(ln) for ln in (run / "events.jsonl").read_text().splitlines()]
    assert len([e for e in events if e["event"] == "patch_kept"]) == len(kept)  # none committed twice
    # No work redone: the interrupted step ran again, nothing finished did; the bench needed a relaunch.
    for counter in ("builds", "unit_compiles", "load_checks"):
        assert state["counters"][counter] == ref_state["counters"][counter], counter
    assert state["counters"]["launches"] == ref_state["counters"]["launches"] + 1
    # The servers of the killed processes stopped by themselves.
    model = str(fixture_job.parent / "model")
    deadline = time.monotonic() + 15
    while _servers_of(model) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _servers_of(model) == []


def test_a_second_resume_of_a_running_run_is_a_one_line_error_naming_the_holder(fixture_job, tmp_path):
    env = {**os.environ, "ROCPORT_HOME": str(tmp_path / "home")}
    profile = yaml.safe_load((fixture_job.parent / "profile.yaml").read_text())
    profile["env"]["BUILD_SLEEP"] = "30"  # the first run is still building when the second resume comes
    (tmp_path / "profile.yaml").write_text(yaml.safe_dump(profile))
    job = tmp_path / "job.yaml"
    job.write_text(
        fixture_job.read_text().replace(
            str(fixture_job.parent / "profile.yaml"), str(tmp_path / "profile.yaml")
        )
    )
    first = subprocess.Popen(
        [*ROCPORT, "port", "-c", str(job), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
        start_new_session=True,
    )
    try:
        run_id = ""
        for line in first.stdout:
            event = json.loads(line)
            run_id = event.get("run_id", run_id)
            if event["event"] == "build_started":
                break
        second = subprocess.run(
            [*ROCPORT, "port", "--resume", run_id],
            check=False,
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
    assert second.returncode == 2 and second.stderr.count("\n") == 1, second.stderr
    assert second.stderr.startswith("rocport: error: ") and f"process {first.pid}" in second.stderr
    listed = subprocess.run(
        [*ROCPORT, "runs", "--format", "json"],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert [r["status"] for r in json.loads(listed.stdout)] == ["killed (--resume)"]
