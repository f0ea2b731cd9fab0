"""Eval tasks: each materializes to a one-commit git repo with its faults, and each injected fault really
fails the real way before any fix: the ROCm build in the image, the model load at server launch, the
launch flags; rocport's diagnose names the expected kind. The CUDA build of every faulty kernel stays green."""

from __future__ import annotations

import shlex
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from agent.profiles import load_profile
from evals.taskdefs import (
    TASKS_DIR,
    ExpectedFailure,
    Task,
    TaskError,
    copy_framework,
    load_task,
    materialize,
    task_names,
)
from sandboxes.local import LocalSandbox, ServiceNotReady
from tests.conftest import ROCM_IMAGE
from tools.diagnose import diagnose_text
from tools.records import ENVIRONMENT_KINDS

pytestmark = pytest.mark.timeout(900)
TASKS = {name: load_task(name) for name in task_names()}
BUILD_TASKS = [t for t in TASKS.values() if t.failures_at("build")]
LOAD_TASKS = [t for t in TASKS.values() if t.failures_at("load") or t.failures_at("launch")]
# Full keep-going builds for the tasks whose point is several units or the gfx950 target; the rest
# compile only the units their faults touch (the same compiler command, less waiting on 2 cores).
FULL_BUILD = {"kernels_combined", "glm52_mi355x"}


def git(repo: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=False)


def assert_diagnosed(log: str, expected: ExpectedFailure, repo: Path, source: str) -> None:
    assert expected.log_contains in log, (
        f"{expected.kind}: {expected.log_contains!r} not in log:\n{log[-3000:]}"
    )
    found = diagnose_text(log, repo_root=repo, source=source)
    hits = [
        f
        for f in found
        if f.kind == expected.kind and (expected.symbol is None or f.symbol == expected.symbol)
    ]
    assert hits, f"{expected.kind}/{expected.symbol} not diagnosed; got {[(f.kind, f.symbol) for f in found]}"
    if expected.file:
        assert any(f.file == expected.file for f in hits), [f.file for f in hits]


def failing_units(task: Task) -> list[str]:
    return sorted(
        {
            f.file
            for f in task.failures_at("build") + task.failures_at("scan")
            if f.file and f.file.endswith(".cu")
        }
    )


# --- the suite and its format ---------------------------------------------------------------------------


def test_suite_covers_the_promised_classes_and_outcomes():
    assert len(TASKS) >= 12
    kinds = {k for t in TASKS.values() for k in t.kinds}
    assert len(kinds) >= 8, kinds
    flagship = TASKS["glm52_mi355x"]
    assert flagship.target_arch == "gfx950"
    assert {"cuda_header", "weight_name", "quant_exclusion"} <= set(flagship.kinds)
    assert any(not t.rule_fixable and t.expect == "resolve" for t in TASKS.values())  # the LLM path
    declines = [t for t in TASKS.values() if t.expect == "decline"]
    assert declines and all(set(t.kinds) <= set(ENVIRONMENT_KINDS) for t in declines)
    assert any(len(t.kinds) > 1 for t in TASKS.values())  # combined faults


@pytest.mark.parametrize("name", sorted(TASKS))
def test_materialized_task_is_one_commit_holding_its_faults(name: str, tmp_path: Path):
    task = TASKS[name]
    repo = materialize(task, tmp_path / "repo")
    assert git(repo, "rev-list", "--count", "HEAD").stdout.strip() == "1"
    assert git(repo, "status", "--porcelain").stdout == ""
    assert git(repo, "branch", "--show-current").stdout.strip() == "main"
    for patch in task.patches:  # every fault is present: its patch reverses cleanly
        assert git(repo, "apply", "-R", "--check", str(TASKS_DIR / patch)).returncode == 0, patch
    for failure in task.failures_at("scan"):
        assert failure.log_contains in (repo / failure.file).read_text()
    assert not (repo / "build").exists()


def test_static_scan_finds_the_scan_stage_faults_and_nothing_in_the_clean_copy(tmp_path: Path):
    from tools.scan import scan_repo

    assert scan_repo(copy_framework("tinyserve", tmp_path / "clean")) == []
    for task in TASKS.values():
        for failure in task.failures_at("scan"):
            repo = tmp_path / task.name
            if not repo.exists():
                materialize(task, repo)
            found = {(f.kind, f.symbol) for f in scan_repo(repo)}
            assert (failure.kind, failure.symbol) in found, (task.name, found)


def test_bad_task_input_gets_one_line_errors(tmp_path: Path):
    with pytest.raises(TaskError, match="no task 'nope': use one of"):
        load_task("nope")
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "name: x\ndescription: y\nexpected_failures: []\nsuccess: [fly]\nrule_fixable: true\n"
        "expect: resolve\n"
    )
    with pytest.raises(TaskError, match=r"bad.yaml"):
        load_task(str(bad))
    stale = tmp_path / "stale.patch"
    stale.write_text(
        (TASKS_DIR / "patches/activation_cuda_headers.patch")
        .read_text()
        .replace('#include "rocm_compat.h"', '#include "gone.h"')
    )
    task = TASKS["cuda_header_activation"].model_copy(update={"patches": [str(stale)]})
    with pytest.raises(TaskError, match="does not apply"):
        materialize(task, tmp_path / "repo")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    with pytest.raises(TaskError, match="not empty"):
        materialize(TASKS["cuda_header_activation"], tmp_path / "full")


# --- build faults -----------------------------------------------------------------------------------


def with_reference_fix(task: Task, repo: Path) -> Path:
    for patch in task.reference_fix:
        assert git(repo, "apply", str(TASKS_DIR / patch)).returncode == 0, patch
    return repo


def build_line(repo: Path, backend_args: str, units: list[str] | None, log: str) -> str:
    only = f" --units {' '.join(units)}" if units else ""
    return f"cd {repo} && python3 build.py {backend_args}{only} > {log} 2>&1; echo $? > {log}.rc"


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(t.name for t in BUILD_TASKS))
def test_build_faults_fail_the_real_way_in_the_rocm_image(name: str, rocm_image, tmp_path: Path):
    """One test (one container) per task, so parallel runs spread the builds: the faulty copy fails
    where the task says, and its reference fix, when it has one, builds."""
    task = TASKS[name]
    units = None if task.name in FULL_BUILD else failing_units(task)
    repo = materialize(task, tmp_path / task.name)
    lines = [build_line(repo, f"--backend rocm --arch {task.target_arch}", units, "build.log")]
    if task.reference_fix:  # the known-good fix really makes it build
        fixed = with_reference_fix(task, materialize(task, tmp_path / f"{task.name}-fixed"))
        lines.append(build_line(fixed, f"--backend rocm --arch {task.target_arch}", units, "build.log"))
    proc = subprocess.run(
        [
            "docker",
            "run",
            "--rm",
            "--network",
            "none",
            "-v",
            f"{tmp_path}:{tmp_path}",
            ROCM_IMAGE,
            "bash",
            "-c",
            "\n".join(lines),
        ],
        capture_output=True,
        text=True,
        timeout=850,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    log = (repo / "build.log").read_text()
    assert (repo / "build.log.rc").read_text().strip() != "0", f"{task.name} built:\n{log[-2000:]}"
    assert f"--offload-arch={task.target_arch}" in log
    for failure in task.failures_at("build"):
        assert f"FAILED: build/{Path(failure.file).stem}.o" in log, task.name
        assert_diagnosed(log, failure, repo, "hipcc")
    if task.reference_fix:
        fixed = tmp_path / f"{task.name}-fixed"
        assert (fixed / "build.log.rc").read_text().strip() == "0", (fixed / "build.log").read_text()[-2000:]
    if task.name == "kernels_combined":
        assert log.count("FAILED: ") == 3  # keep-going: every broken unit in one build


def test_the_rocm_builds_cover_every_task_with_build_faults_and_the_combined_one():
    assert len(BUILD_TASKS) >= 5 and "kernels_combined" in {t.name for t in BUILD_TASKS}


# --- load and launch faults -------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch_log(repo: Path, task: Task, checkpoint: Path) -> str:
    """Launch the server the way the profile says; it must not come up. Returns its log."""
    port = free_port()
    cmd = load_profile(task.profile).launch.command.format(
        model_path=shlex.quote(str(checkpoint)), port=port, host="127.0.0.1", tp=1, dp=1
    )
    cmd = f"{sys.executable} {cmd.removeprefix('python3 ')} {task.launch_args}"
    with LocalSandbox(repo) as box, pytest.raises(ServiceNotReady) as err:
        box.start(cmd, name="server", port=port, health_path="/health", ready_timeout=60)
    return err.value.log


@pytest.mark.parametrize("name", sorted(t.name for t in LOAD_TASKS))
def test_load_and_launch_faults_stop_the_server_the_real_way(name: str, tmp_path: Path):
    task = TASKS[name]
    repo = materialize(task, tmp_path / "repo")
    checkpoint = tmp_path / "ckpt"
    subprocess.run(
        shlex.split(task.checkpoint_command(str(checkpoint))),
        cwd=repo,
        check=True,
        capture_output=True,
        executable=sys.executable,
    )
    for failure in task.failures_at("launch"):
        assert_diagnosed(launch_log(repo, task, checkpoint), failure, repo, "server")
    earlier: list[ExpectedFailure] = []
    for failure in task.failures_at("load"):
        for masking in earlier:  # undo the faults that hide this one, as a fix would
            assert git(repo, "apply", "-R", str(TASKS_DIR / masking.patch)).returncode == 0
        assert_diagnosed(launch_log(repo, task, checkpoint), failure, repo, "server")
        earlier = [failure]
