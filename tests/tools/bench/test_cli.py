"""`rocport bench` and `rocport bench compare` through the real entry point, against a real server."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from agent.cli import app
from tests.tools.bench.sse_server import Behaviour


def _rocport(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    exe = shutil.which("rocport")
    cmd = [exe] if exe else [sys.executable, "-c", "from agent.cli import main; main()"]
    return subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=timeout, check=False)


@pytest.mark.serial  # millisecond timings (decode tok/s, TTFT): run alone after the parallel part
def test_bench_writes_json_prints_a_summary_and_compares(sse_server, tmp_path):
    server = sse_server(Behaviour(ttft_s=0.03, itl_s=0.002))
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    common = ["--base-url", server.url, "--model", "m", "--isl", "64", "--osl", "8", "--num-prompts", "8"]
    p = _rocport("bench", *common, "--max-concurrency", "2", "--single-stream", "2", "--output", str(a))
    assert p.returncode == 0, p.stderr
    assert "VALID" in p.stdout and "TTFT" in p.stdout and "Output tok/s" in p.stdout
    assert "generated tokens" in p.stdout  # every tok/s figure says which kind it is
    data = json.loads(a.read_text())
    assert data["completed"] == 8 and data["single_stream"]["completed"] == 2
    # No --timeout: each request is bounded by its lengths (60 s + 10 s per 1k input + 0.5 s per output token).
    assert data["config"]["timeout_s"] == 64.6
    # Alone on the server: 8 tokens in 30 + 7 x 2 ms; decoding at one token per 2 ms.
    assert 100 <= data["single_stream"]["output_tokens_per_s"] <= 220
    assert 350 <= data["single_stream"]["decode_tokens_per_s"] <= 800  # the server catches up on its schedule
    assert 30 <= data["median_ttft_ms"] <= 45
    # The same app in-process (the subprocess above proved the console script).
    p = CliRunner().invoke(app, ["bench", *common, "--max-concurrency", "8", "--json", "--output", str(b)])
    assert p.exit_code == 0, p.output
    assert json.loads(p.stdout)["max_concurrency"] == 8
    p = CliRunner().invoke(app, ["bench", "compare", str(a), str(b)])
    assert p.exit_code == 0, p.output
    assert "Requests/s" in p.stdout and "%" in p.stdout and "VALID" in p.stdout


def test_invalid_run_exits_nonzero_and_says_why(sse_server):
    server = sse_server(Behaviour(short_by=1, ttft_s=0.005, itl_s=0.001))
    p = CliRunner().invoke(
        app,
        [
            "bench",
            "--base-url",
            server.url,
            "--model",
            "m",
            "--isl",
            "16",
            "--osl",
            "4",
            "--num-prompts",
            "3",
        ],
    )
    assert p.exit_code == 1
    assert "INVALID" in p.stdout and "output length differs" in p.stdout


def test_user_mistakes_are_one_line_errors(sse_server):
    server = sse_server(Behaviour(fail="http500", fail_every=1))

    cases = [
        (["bench", "--model", "m", "--isl", "4", "--osl", "4"], "give --base-url"),
        (
            ["bench", "--base-url", "http://127.0.0.1:9", "--model", "m", "--isl", "8"],
            "give both --isl N and --osl N",
        ),
        (
            ["bench", "--base-url", "http://127.0.0.1:9", "--isl", "4", "--osl", "2"],
            "cannot read the served model from http://127.0.0.1:9/v1/models",
        ),
        (["bench", "--base-url", "http://127.0.0.1:9", "--model", "m", "--preset", "nope"], "unknown preset"),
        (
            ["bench", "--base-url", "http://127.0.0.1:9", "--model", "m", "--isl", "4", "--osl", "2"],
            "cannot connect to http://127.0.0.1:9",
        ),
        (
            ["bench", "--base-url", "ftp://x", "--model", "m", "--isl", "4", "--osl", "2"],
            "--base-url must look like",
        ),
        (["bench", "compare", "/nonexistent/a.json", "/nonexistent/b.json"], "does not exist"),
        (
            [
                "bench",
                "--base-url",
                "http://127.0.0.1:9",
                "--model",
                "m",
                "--isl",
                "4",
                "--osl",
                "2",
                "--extra-body",
                "{nope",
            ],
            "--extra-body is not JSON",
        ),
        (
            ["bench", "--base-url", server.url, "--model", "m", "--isl", "4", "--osl", "2"],
            "all 1 warmup requests failed; first error: HTTP 500",
        ),
    ]
    for args, says in cases:
        p = CliRunner().invoke(app, args)
        assert p.exit_code == 2, (args, p.output)
        assert says in p.stderr, p.stderr
        assert p.exception is None or isinstance(p.exception, SystemExit)
        assert len(p.stderr.strip().splitlines()) == 1


def test_bench_reads_the_model_from_v1_models_and_prints_the_bench_serving_block(sse_server, tmp_path):
    server = sse_server(Behaviour(ttft_s=0.005, itl_s=0.001))
    out = tmp_path / "r.json"
    p = _rocport(
        "bench",
        "--base-url",
        server.url,
        "--isl",
        "32",
        "--osl",
        "4",
        "--num-prompts",
        "6",
        "--output",
        str(out),
    )
    assert p.returncode == 0, p.stderr
    assert json.loads(out.read_text())["config"]["model"] == "tiny-served"
    [served] = {s.body.get("model") for s in server.seen}
    assert served == "tiny-served"
    block = p.stdout.split("=" * 50)[0]
    assert p.stdout.startswith("============ Serving Benchmark Result ============\n")
    assert block.split("Successful requests:")[1].split()[0] == "6" and "Mean TTFT (ms):" in block
    assert "Output token throughput (tok/s):" in block


def test_bench_without_a_terminal_beats_a_heartbeat_with_completed_over_total(sse_server, tmp_path):
    import io

    from rich.console import Console

    from agent.cli.bench_live import BenchProgress
    from tools.bench.client import RequestRecord

    log = io.StringIO()
    with BenchProgress(
        Console(file=log, force_terminal=False), {"warmup": 1, "measured": 4, "single": 0}, heartbeat_s=0.1
    ) as progress:
        for phase in ("warmup", "measured", "measured"):
            progress(RequestRecord(0, phase, 8, 4, False))
        import time

        time.sleep(0.35)
    assert "… bench: warmup 1/1, measured 2/4 requests done" in log.getvalue()


def test_compare_warns_when_the_workloads_differ(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(
        json.dumps(
            {
                "random_input_len": 1024,
                "random_output_len": 128,
                "max_concurrency": 32,
                "request_rate": "inf",
                "completed": 200,
                "output_throughput": 100.0,
            }
        )
    )
    b.write_text(
        json.dumps(
            {
                "random_input_len": 20000,
                "random_output_len": 128,
                "max_concurrency": 32,
                "request_rate": "inf",
                "completed": 200,
                "output_throughput": 90.0,
            }
        )
    )
    p = _rocport("bench", "compare", str(a), str(b), "--format", "plain")
    assert p.returncode == 0, p.stderr
    assert "rocport: warning: the workloads differ (input tokens: 1024 vs 20000)" in p.stderr
    assert p.stdout.splitlines()[0] == "metric\tA\tB\tdelta %\tbetter"
    same = _rocport("bench", "compare", str(a), str(a))
    assert "warning" not in same.stderr
