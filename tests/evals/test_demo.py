"""`rocport demo` end to end (the README's main job), then `rocport pr` and `rocport report --html` on
its run: the patch series applies with `git am` on a clean clone at the original ref, and the report
page renders in Chromium with the run's real numbers."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.browser import render

pytestmark = pytest.mark.slow  # long end-to-end runs: started first in a parallel run


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory, rocm_image, nvcc):
    root = tmp_path_factory.mktemp("demo")
    env = {**os.environ, "ROCPORT_HOME": str(root / "home"), "COLUMNS": "200"}
    proc = subprocess.run(
        [sys.executable, "-m", "agent.cli", "demo", "--workdir", str(root / "work")],
        capture_output=True,
        text=True,
        timeout=1800,
        env=env,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    [run_dir] = (root / "home" / "runs").iterdir()
    return {
        "root": root,
        "env": env,
        "out": proc.stdout,
        "run": run_dir,
        "state": json.loads((run_dir / "state.json").read_text()),
    }


def test_demo_ports_the_flagship_with_rules_in_one_launch(demo_run):
    out, state = demo_run["out"], demo_run["state"]
    assert state["status"] == "green"
    kinds = sorted(
        state["known_failures"][o["proposal"]["failure_signature"]]["kind"]
        for o in state["outcomes"]
        if o["kept"]
    )
    assert kinds == ["cuda_header", "quant_exclusion", "weight_name"]
    c = state["counters"]
    assert (c["builds"], c["launches"], c["tokens_in"] + c["tokens_out"]) == (1, 1, 0)
    assert "benchmark (measured window)" in out and "output tok/s" in out


def test_pr_series_applies_on_a_clean_clone_at_the_original_ref(demo_run, tmp_path):
    run_id = demo_run["run"].name
    proc = subprocess.run(
        [sys.executable, "-m", "agent.cli", "pr", run_id],
        capture_output=True,
        text=True,
        env=demo_run["env"],
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    patches = sorted((demo_run["run"] / "pr").glob("*.patch"))
    assert len(patches) == 3
    origin = demo_run["root"] / "work" / "glm52_mi355x-rules" / "repo"  # the task's starting point
    clean = tmp_path / "clean"
    subprocess.run(["git", "clone", "-q", str(origin), str(clean)], check=True)
    am = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@e", "am", *map(str, patches)],
        cwd=clean,
        capture_output=True,
        text=True,
    )
    assert am.returncode == 0, am.stderr
    ported = Path(demo_run["state"]["repo_dir"])
    for rel in ("csrc/activation.cu", "tinyserve/models/glm_moe.py"):
        assert (clean / rel).read_text() == (ported / rel).read_text()
    description = (demo_run["run"] / "pr" / "PR.md").read_text()
    assert "## Failures → fixes" in description and "Not validated here" in description


def test_report_html_renders_with_the_runs_numbers(demo_run):
    run_id = demo_run["run"].name
    proc = subprocess.run(
        [sys.executable, "-m", "agent.cli", "report", run_id, "--html"],
        capture_output=True,
        text=True,
        env=demo_run["env"],
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    dom, errors, _ = render(demo_run["run"] / "report.html", demo_run["root"])
    assert errors == []
    throughput = demo_run["state"]["bench"]["output_throughput"]
    assert f"{throughput:.2f}" in dom and 'id="latency-plot"' in dom
    assert re.search(r"full builds</td><td>1<", dom)
