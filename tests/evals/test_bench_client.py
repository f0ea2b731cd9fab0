"""evals/bench_client.py runs end to end against its own server process and prints its table."""

from __future__ import annotations

import subprocess
import sys


def test_client_benchmark_prints_cost_and_accuracy():
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "evals.bench_client",
            "--concurrency",
            "4",
            "--rounds",
            "1",
            "--osl",
            "16",
            "--itl-ms",
            "0",
            "2",
            "--ttft-ms",
            "20",
        ],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert p.returncode == 0, p.stderr[-2000:]
    out = p.stdout
    assert "CPU us/chunk" in out and "|TTFT err|" in out and "floor us/read" in out
    assert "sglang bench_serving (python)" in out  # the reference figures
    rows = [ln.split() for ln in out.splitlines() if ln.strip().startswith("4 ")]
    assert len(rows) == 2  # one row per server pacing
    for row in rows:
        assert row[1] == "4" and row[2] == "0" and row[3] == "64"  # 4 requests, none failed, 64 chunks
