"""`rocport diagnose` through the real typer app: the table, JSON, --repo."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from agent.cli import app
from tools.records import Failure

CORPUS = Path(__file__).parent / "corpus"


def test_json_lists_failure_records_that_round_trip(git_repo):
    repo = git_repo(
        {
            "csrc/cuda_compat.h": "",
            "csrc/layernorm_kernels.hip": "",
            "csrc/moe/topk_softmax_kernels.hip": "",
            "csrc/quantization/gptq/q_gemm.hip": "",
            "csrc/custom_all_reduce.hip": "",
        }
    )
    result = CliRunner().invoke(
        app, ["diagnose", str(CORPUS / "cmake_make_k_hip.log"), "--json", "--repo", str(repo)]
    )
    assert result.exit_code == 0, result.output
    records = [Failure.from_dict(d) for d in json.loads(result.output)]
    assert records[0].kind == "cuda_std"
    assert records[0].file == "csrc/cuda_compat.h"
    assert records[0].facts["units"] == ["csrc/layernorm_kernels.hip", "csrc/moe/topk_softmax_kernels.hip"]
    assert all(r.signature and r.excerpt for r in records)


def test_table_shows_kind_where_and_what():
    result = CliRunner().invoke(
        app, ["diagnose", str(CORPUS / "sglang_import_deep_gemm.log")], env={"COLUMNS": "250"}
    )
    assert result.exit_code == 0
    assert "cuda_only_dep" in result.output
    assert "fp8_kernel.py:45" in result.output
    assert "No module named 'deep_gemm'" in result.output


def test_repo_that_is_not_a_directory_is_a_one_line_error(tmp_path):
    result = CliRunner().invoke(
        app, ["diagnose", str(CORPUS / "unknown_crash.log"), "--repo", str(tmp_path / "x")]
    )
    assert result.exit_code == 2
    assert result.output.strip().count("\n") == 0 and "is not a directory" in result.output


def test_console_entry_point_runs(tmp_path):
    log = tmp_path / "server.log"
    log.write_text("launch_server.py: error: unrecognized arguments: --enable-dp-attention\n")
    run = subprocess.run(
        [sys.executable, "-c", "from agent.cli import main; main()", "diagnose", str(log), "--json"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert [(d["kind"], d["symbol"]) for d in json.loads(run.stdout)] == [
        ("serve_flag", "--enable-dp-attention")
    ]
