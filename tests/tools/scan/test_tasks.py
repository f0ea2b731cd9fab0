"""The scan against the fixture framework's fault-injected tasks: a clean tinyserve has no finding,
and every injected compile-time/import fault the task expects is found where the task says."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tools.scan import scan_repo

REPO = Path(__file__).resolve().parents[3]
TINYSERVE = REPO / "evals" / "frameworks" / "tinyserve"
TASKS = REPO / "evals" / "tasks"
SCANNABLE = {
    "cuda_header",
    "cub",
    "cuda_std",
    "warp_intrinsic",
    "warp_size",
    "inline_ptx",
    "bf16_type",
    "fp16_type",
    "fp8_type",
    "cuda_only_dep",
}


def _tasks() -> list[Path]:
    out = []
    for path in sorted(TASKS.glob("*.yaml")):
        task = yaml.safe_load(path.read_text())
        if isinstance(task, dict) and any(
            e.get("kind") in SCANNABLE and e.get("symbol") for e in task.get("expected_failures", [])
        ):
            out.append(path)
    return out


def test_clean_fixture_framework_has_no_finding():
    assert TINYSERVE.is_dir()
    assert scan_repo(TINYSERVE) == []


@pytest.mark.parametrize("task_path", _tasks(), ids=lambda p: p.stem)
def test_injected_faults_are_found(tmp_path, task_path):
    task = yaml.safe_load(task_path.read_text())
    tree = tmp_path / "tinyserve"
    shutil.copytree(TINYSERVE, tree, ignore=shutil.ignore_patterns("__pycache__", "build"))
    touched = set()
    for patch in task["patches"]:
        text = (TASKS / patch).read_text()
        touched |= {line[6:] for line in text.splitlines() if line.startswith("+++ b/")}
        subprocess.run(["git", "apply", str(TASKS / patch)], cwd=tree, check=True)
    found = {(f.kind, f.file, f.symbol) for f in scan_repo(tree)}
    expected = {
        (e["kind"], e["file"], e["symbol"])
        for e in task["expected_failures"]
        if e.get("kind") in SCANNABLE and e.get("symbol")
    }
    assert expected <= found
    assert {file for _, file, _ in found} <= touched
