"""A green port of the fixture continuing into `rocport tune` (the job's `tune:` section), end to end:
real tinyserve servers (data-parallel worker processes, two MoE kernels), the real benchmark, the MoE
tuning script, the report and PR text; then the chosen launch command relaunched by hand."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent.sweep.report import dashboard_html, markdown
from agent.sweep.results import CellResult
from agent.tune.sections import with_tune
from evals.tune_fixture import fixture_job, python3_path, relaunch
from tools.pr_text import pr_description
from tools.report import RunView
from tools.tune.results import load_outcome

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]


def rocport(home: Path, *args: str, timeout: float = 1500) -> subprocess.CompletedProcess:
    env = {**os.environ, "ROCPORT_HOME": str(home), "PATH": python3_path()}
    return subprocess.run(
        [sys.executable, "-m", "agent.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
    )


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    """`rocport port` with tune.enabled and tune.exhaustive, then `rocport tune` printing the same searches."""
    home, work = tmp_path_factory.mktemp("home"), tmp_path_factory.mktemp("work")
    proc = rocport(home, "port", "-c", str(fixture_job(work, {"exhaustive": True})))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (run_id,) = [p.name for p in (home / "runs").iterdir()]
    run_dir = home / "runs" / run_id
    outcome = load_outcome(run_dir / "tune" / "tune.json")
    assert outcome is not None, proc.stdout[-3000:]
    return home, run_id, run_dir, outcome


def test_the_search_finds_the_exhaustive_best_with_at_most_60_percent_of_the_launches(tuned):
    _, _, run_dir, outcome = tuned
    search, grid = outcome.search, outcome.exhaustive
    assert grid.grid_size == search.grid_size >= 6
    assert grid.launches == grid.grid_size
    assert search.launches <= 0.6 * grid.launches
    assert search.best == grid.best, (run_dir / "tune" / "tune.md").read_text()
    assert any(t.status == "stopped early" for t in search.trials), "no dominated candidate was stopped early"
    # both searches side by side
    rows = [
        ln
        for ln in (run_dir / "tune" / "tune.md").read_text().splitlines()
        if ln.startswith(("| coordinate |", "| exhaustive |"))
    ]
    assert len(rows) == 2 and all(search.best in r for r in rows)


def test_the_report_and_pr_show_the_table_the_plot_and_dollars_per_million_tokens(tuned):
    _, _, run_dir, outcome = tuned
    report = (run_dir / "report.md").read_text()  # rendered again by the port once the tune finished
    assert "## Serving configuration (rocport tune)" in report
    assert "| configuration | status | output tok/s per node | per GPU |" in report and "$/Mtok" in report
    assert "![throughput against TTFT](tune/tune.svg)" in report
    assert "B200 (reference, 8 GPUs)" in report and "$4.525" in report  # 6.5 $/GPU-h x 8 at 3,192 tok/s
    best = outcome.best
    assert f"| `{best.key}` | measured |" in report and best.key in report.split("chosen")[0]
    svg = (run_dir / "tune" / "tune.svg").read_text()
    assert svg.count("<circle") >= 3 and "chosen:" in svg
    assert 'id="tune-plot"' in (run_dir / "report.html").read_text()
    assert "serve:\n  tp: " in outcome.job_snippet
    pr = pr_description(RunView.load(run_dir), [])
    assert "## Serving configuration (rocport tune)" in pr and "$/Mtok" in pr and best.key in pr


def test_the_moe_configs_are_committed_with_their_evidence(tuned):
    _, _, run_dir, outcome = tuned
    files = outcome.moe["files"]
    assert files == ["tinyserve/layers/moe_configs/E=4,N=32,H=64.json"]
    log = subprocess.run(
        ["git", "log", "-1", "--format=%B", "--name-only"],
        cwd=run_dir / "repo",
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "Evidence (tuning script output)" in log and "best block_m=" in log and files[0] in log
    table = json.loads((run_dir / "repo" / files[0]).read_text())
    assert set(table) == {"1", "16", "64", "256"} and all(v["block_m"] > 0 for v in table.values())


def test_the_chosen_launch_command_reproduces_its_throughput_within_10_percent(tuned):
    _, _, run_dir, outcome = tuned
    best = outcome.best
    again = relaunch(outcome, run_dir / "repo")
    assert again.valid, again.reasons
    assert abs(again.output_tok_s / best.output_tok_s - 1) <= 0.10, (again.repeats, best.repeats)
    assert outcome.rerun_delta is not None and abs(outcome.rerun_delta) <= 0.10


def test_the_cli_reprints_the_tables_and_bad_input_is_one_line(tuned, tmp_path):
    home, run_id, _, outcome = tuned
    proc = rocport(home, "tune", run_id, "--show")
    assert proc.returncode == 0, proc.stderr
    rows = [ln for ln in proc.stdout.splitlines() if ln.startswith(("| coordinate |", "| exhaustive |"))]
    assert len(rows) == 2 and outcome.chosen_command in proc.stdout and "$/Mtok" in proc.stdout
    proc = rocport(tmp_path, "tune", "no-such-run")
    assert proc.returncode == 2 and proc.stderr.startswith("rocport: error: no run 'no-such-run'")
    assert len(proc.stderr.strip().splitlines()) == 1
    proc = rocport(home, "tune", run_id, "--reference", "B200")
    assert proc.returncode == 2 and "NAME:TOKENS_PER_S_PER_NODE" in proc.stderr
    proc = rocport(home, "tune", run_id, "--gpus", "0")
    assert proc.returncode == 2 and proc.stderr.startswith("rocport: error: tune option")


def test_a_sweep_cell_carries_the_tune_to_the_dashboard(tuned, monkeypatch):
    home, run_id, _, outcome = tuned
    monkeypatch.setenv("ROCPORT_HOME", str(home))
    bench = with_tune({"output_throughput": 10.0}, run_id)
    assert bench["tune"]["best"] == outcome.best.key and bench["tune"]["launches"] == outcome.search.launches
    cell = CellResult(
        cell_key="tinyserve@main/tiny-moe/gfx942/glm52",
        night="2026-12-03",
        sweep="nightly",
        status="passed",
        output_tok_s=10.0,
        bench=bench,
    )
    summary = markdown([cell], "nightly")
    assert "## Serving configuration (rocport tune)" in summary and f"`{outcome.best.key}`" in summary
    assert f"{outcome.search.launches} of {outcome.search.grid_size}" in summary
    assert 'id="tune"' in dashboard_html([cell], "nightly")
    assert with_tune({"output_throughput": 1.0}, "20260101-000000-untuned-0000") == {"output_throughput": 1.0}
