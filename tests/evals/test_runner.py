"""`rocport eval` end to end on two tasks in real ROCm containers: a kernel fault and a load fault,
both resolved by rules alone with one launch and no LLM tokens; the JSON and table say so."""

import json
import os
import subprocess
import sys

import pytest


@pytest.mark.slow
def test_eval_resolves_two_rule_tasks(tmp_path, rocm_image, nvcc):
    out_json = tmp_path / "eval.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "agent.cli",
            "eval",
            "cuda_header_activation",
            "weight_name_mtp_shared_experts",
            "--strategy",
            "rules",
            "--workdir",
            str(tmp_path / "work"),
            "--output",
            str(out_json),
        ],
        capture_output=True,
        text=True,
        timeout=1800,
        env={**os.environ, "ROCPORT_HOME": str(tmp_path / "home"), "COLUMNS": "200"},
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    data = json.loads(out_json.read_text())
    runs = {r["task"]: r for r in data["runs"]}
    assert set(runs) == {"cuda_header_activation", "weight_name_mtp_shared_experts"}
    for r in runs.values():
        assert r["resolved"], r
        assert r["launches"] == 1 and r["llm_tokens"] == 0 and r["criteria"]["cuda_build"]
    # the scan-flagged unit is fixed from its own compile before the one build; a load fault needs no
    # rebuild at all
    assert runs["cuda_header_activation"]["builds"] == 1
    assert runs["weight_name_mtp_shared_experts"]["builds"] == 1
    assert data["totals"]["rules"]["resolved"] == 2
    assert "cuda_header_activation" in proc.stdout and "totals" in proc.stdout
    done = [ln for ln in proc.stderr.splitlines() if ln.startswith(("[1/2] ", "[2/2] "))]
    assert len(done) == 2 and all("resolved" in ln and "NOT" not in ln for ln in done), proc.stderr[-2000:]
    # the second run's build is answered from what the first compiled (the compile cache runs share):
    # its weight-name fault asks for no unit compile, so every hit is a unit the first run published
    caches = sorted(
        (
            next(e for e in map(json.loads, events.read_text().splitlines()) if e["event"] == "compile_cache")
            for events in (tmp_path / "home" / "runs").glob("*/events.jsonl")
        ),
        key=lambda e: e["ts"],
    )
    assert caches[1]["compile_requests"] == 0 and caches[1]["compile_cache_hits"] >= 3, caches


def test_unknown_task_and_strategy_are_one_line_errors(tmp_path):
    env = {**os.environ, "ROCPORT_HOME": str(tmp_path)}
    bad_task = subprocess.run(
        [sys.executable, "-m", "agent.cli", "eval", "no_such_task"], capture_output=True, text=True, env=env
    )
    assert bad_task.returncode == 2 and "no task 'no_such_task'" in bad_task.stderr
    bad_strategy = subprocess.run(
        [sys.executable, "-m", "agent.cli", "eval", "--strategy", "magic"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert bad_strategy.returncode == 2 and "unknown strategy 'magic'" in bad_strategy.stderr
