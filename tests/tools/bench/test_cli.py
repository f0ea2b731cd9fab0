"""`rocport bench` and `rocport bench compare` through the real entry point, against a real server."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys

from typer.testing import CliRunner

from agent.cli import app
from tests.tools.bench.sse_server import Behaviour


def _rocport(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    exe = shutil.which("rocport")
    cmd = [exe] if exe else [sys.executable, "-c", "from agent.cli import main; main()"]
    return subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=timeout, check=False)


def test_bench_writes_json_prints_a_summary_and_compares(sse_server, tmp_path):
    server = sse_server(Behaviour(ttft_s=0.03, itl_s=0.002))
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    common = ["--base-url", server.url, "--model", "m", "--isl", "64", "--osl", "8", "--num-prompts", "8"]
    p = _rocport("bench", *common, "--max-concurrency", "2", "--single-stream", "2", "--output", str(a))
    assert p.returncode == 0, p.stderr
    assert "VALID" in p.stdout and "TTFT" in p.stdout and "Output tok/s" in p.stdout
    assert "generated tokens" in p.stdout          # every tok/s figure says which kind it is
    data = json.loads(a.read_text())
    assert data["completed"] == 8 and data["single_stream"]["completed"] == 2
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
    p = CliRunner().invoke(app, ["bench", "--base-url", server.url, "--model", "m", "--isl", "16", "--osl", "4",
                                 "--num-prompts", "3"])
    assert p.exit_code == 1
    assert "INVALID" in p.stdout and "output length differs" in p.stdout


def test_user_mistakes_are_one_line_errors(sse_server):
    server = sse_server(Behaviour(fail="http500", fail_every=1))

    cases = [
        (["bench", "--model", "m", "--isl", "4", "--osl", "4"], "give --base-url"),
        (["bench", "--base-url", "http://127.0.0.1:9", "--model", "m"], "give --isl N --osl N, or --preset"),
        (["bench", "--base-url", "http://127.0.0.1:9", "--model", "m", "--preset", "nope"], "unknown preset"),
        (["bench", "--base-url", "http://127.0.0.1:9", "--model", "m", "--isl", "4", "--osl", "2"],
         "cannot connect to http://127.0.0.1:9"),
        (["bench", "--base-url", "ftp://x", "--model", "m", "--isl", "4", "--osl", "2"], "--base-url must look like"),
        (["bench", "compare", "/nonexistent/a.json", "/nonexistent/b.json"], "does not exist"),
        (["bench", "--base-url", "http://127.0.0.1:9", "--model", "m", "--isl", "4", "--osl", "2",
          "--extra-body", "{nope"], "--extra-body is not JSON"),
        (["bench", "--base-url", server.url, "--model", "m", "--isl", "4", "--osl", "2"],
         "all 1 warmup requests failed; first error: HTTP 500"),
    ]
    for args, says in cases:
        p = CliRunner().invoke(app, args)
        assert p.exit_code == 2, (args, p.output)
        assert says in p.stderr, p.stderr
        assert p.exception is None or isinstance(p.exception, SystemExit)
        assert len(p.stderr.strip().splitlines()) == 1
