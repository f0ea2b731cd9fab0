"""`rocport scan` through its real entry point: table, JSON, SARIF 2.1.0, --output, errors."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from agent.cli import app
from tests.tools.scan.helpers import write
from tools.records import KINDS

TREE = {
    "csrc/k.cu": "#include <cuda_bf16.h>\n#ifndef USE_ROCM\n#include <cub/cub.cuh>\n#endif\n"
    "__device__ float f(float v) { return __shfl_xor_sync(0xffffffff, v, 1); }\n"
    "__device__ int lane() { return threadIdx.x % 32; }\n",
    "srt/layers/m.py": "import torch\nimport deep_gemm\n",
}


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    """The CLI caches results by default: keep each test's cache in its own directory."""
    monkeypatch.setenv("ROCPORT_CACHE_DIR", str(tmp_path / "cache"))


def rocport(*args: str) -> subprocess.CompletedProcess:
    exe = shutil.which("rocport")
    cmd = [exe] if exe else [sys.executable, "-c", "from agent.cli import main; main()"]
    return subprocess.run(cmd + list(args), capture_output=True, text=True, timeout=120, check=False)


def check_sarif(log: dict) -> None:
    """The SARIF 2.1.0 fields GitHub code scanning requires (the schema is not available offline)."""
    assert log["version"] == "2.1.0" and "sarif-2.1.0" in log["$schema"]
    (run,) = log["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "rocport"
    rule_ids = [r["id"] for r in driver["rules"]]
    assert len(rule_ids) == len(set(rule_ids))
    for rule in driver["rules"]:
        assert rule["id"] in KINDS and rule["help"]["text"] and rule["shortDescription"]["text"]
        assert rule["defaultConfiguration"]["level"] in ("none", "note", "warning", "error")
    for result in run["results"]:
        assert result["ruleId"] in rule_ids and rule_ids[result["ruleIndex"]] == result["ruleId"]
        assert result["level"] in ("none", "note", "warning", "error")
        assert result["message"]["text"]
        (loc,) = result["locations"]
        phys = loc["physicalLocation"]
        assert phys["artifactLocation"]["uri"] and not phys["artifactLocation"]["uri"].startswith("/")
        assert phys["region"]["startLine"] >= 1 and phys["region"]["startColumn"] >= 1
        assert all(isinstance(v, str) and v for v in result["partialFingerprints"].values())


def test_sarif_through_the_real_cli(tmp_path):
    root = write(tmp_path / "repo", TREE)
    out = tmp_path / "scan.sarif"
    proc = rocport("scan", str(root), "--format", "sarif", "--output", str(out))
    assert proc.returncode == 1, proc.stderr  # findings remain: exit 1, like ruff
    log = json.loads(out.read_text())
    check_sarif(log)
    results = log["runs"][0]["results"]
    where = sorted(
        (
            r["ruleId"],
            r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            r["locations"][0]["physicalLocation"]["region"]["startLine"],
        )
        for r in results
    )
    assert where == [
        ("cuda_header", "csrc/k.cu", 1),
        ("cuda_only_dep", "srt/layers/m.py", 2),
        ("warp_intrinsic", "csrc/k.cu", 5),
        ("warp_size", "csrc/k.cu", 6),
    ]
    assert "wrote 4 finding(s)" in proc.stderr


def test_json_through_the_real_cli_is_a_list_of_failures(tmp_path):
    root = write(tmp_path / "repo", TREE)
    proc = rocport("scan", str(root), "--format", "json")
    assert proc.returncode == 1, proc.stderr
    items = json.loads(proc.stdout)
    assert [(i["kind"], i["file"], i["line"], i["symbol"], i["facts"]["fix_family"]) for i in items] == [
        ("cuda_header", "csrc/k.cu", 1, "cuda_bf16.h", "guard_cuda_headers"),
        ("warp_intrinsic", "csrc/k.cu", 5, "__shfl_xor_sync", "warp_compat"),
        ("warp_size", "csrc/k.cu", 6, "% 32", "warp_size_source"),
        ("cuda_only_dep", "srt/layers/m.py", 2, "deep_gemm", "platform_guarded_import"),
    ]
    assert all(i["source"] == "scan" and i["signature"] for i in items)


def test_table_lists_kind_place_construct_and_fix(tmp_path):
    root = write(tmp_path / "repo", TREE)
    result = CliRunner().invoke(app, ["scan", str(root)], terminal_width=200)
    assert result.exit_code == 1, result.output
    assert "4 finding(s) in 2 file(s)" in result.output
    row = next(line for line in result.output.splitlines() if "cuda_bf16.h" in line)
    assert "cuda_header" in row and "csrc/k.cu:1" in row and "guard_cuda_headers" in row


def test_hipify_flag_and_profile_hide_translated_constructs(tmp_path):
    root = write(tmp_path / "repo", TREE)
    profile = tmp_path / "hip.yaml"
    profile.write_text("name: hip\nhipify_at_build: true\nbuild:\n  rocm: make\nlaunch:\n  command: serve\n")
    for extra in (["--hipify"], ["--profile", str(profile)]):
        result = CliRunner().invoke(app, ["scan", str(root), "--format", "json", *extra])
        assert result.exit_code == 1, result.output
        assert [i["symbol"] for i in json.loads(result.output)] == ["__shfl_xor_sync", "% 32", "deep_gemm"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["scan", "/nonexistent/repo"], "/nonexistent/repo: no such file or directory"),
        (["scan", ".", "--profile", "no-such-framework"], "no profile 'no-such-framework'"),
        (["scan", ".", "--format", "xml"], "xml"),
    ],
)
def test_bad_input_is_a_one_line_error(args, message):
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output


def test_piped_statistics_are_one_whole_line_per_kind(tmp_path):
    """Off a terminal `--statistics` prints `count kind [fix family]` lines, as ruff does: rich's table
    folded a long fix family at 80 columns, splitting it across lines."""
    root = write(tmp_path / "repo", TREE)
    proc = rocport("scan", str(root), "--statistics")
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("rocport scan: ") and lines[0].endswith(" finding(s) by kind")
    rows = [line.split() for line in lines[1:]]
    assert rows and all(r[0].isdigit() and r[-1].startswith("[") and r[-1].endswith("]") for r in rows)
    assert sum(int(r[0]) for r in rows) == int(lines[0].split()[2])
    assert "│" not in proc.stdout and "─" not in proc.stdout


def test_skipped_files_are_reported_on_stderr(tmp_path):
    root = write(tmp_path / "repo", {"k.cu": b"\x00\x01binary", "m.py": "x = 1\n"})
    proc = rocport("scan", str(root), "--format", "json")
    assert proc.returncode == 0 and json.loads(proc.stdout) == []
    assert "skipped k.cu: binary file" in proc.stderr


def test_select_exclude_statistics_and_exit_status(tmp_path):
    root = write(tmp_path / "repo", TREE)
    selected = CliRunner().invoke(app, ["scan", str(root), "-f", "json", "--select", "warp_size"])
    assert selected.exit_code == 1
    assert [i["symbol"] for i in json.loads(selected.output)] == ["% 32"]
    stats = CliRunner().invoke(app, ["scan", str(root), "--statistics"], terminal_width=200)
    row = next(line for line in stats.output.splitlines() if "cuda_header" in line)
    assert row.split()[:2] == ["1", "cuda_header"]
    clean = CliRunner().invoke(
        app, ["scan", str(root), "-f", "json", "--exclude", "csrc", "--exclude", "srt"]
    )
    assert clean.exit_code == 0 and json.loads(clean.output) == []


def test_a_second_scan_reuses_unchanged_files_and_sees_edits(tmp_path):
    root = write(tmp_path / "repo", TREE)
    first = CliRunner().invoke(app, ["scan", str(root), "-f", "json"])
    assert list((tmp_path / "cache" / "scan").iterdir()), "the default scan keeps a cache"
    again = CliRunner().invoke(app, ["scan", str(root), "-f", "json"])
    assert json.loads(again.output) == json.loads(first.output)
    kernel = next(root.rglob("*.cu"))
    kernel.write_text("#include <cuda_fp16.h>\n" + kernel.read_text())
    edited = CliRunner().invoke(app, ["scan", str(root), "-f", "json", "--select", "cuda_header"])
    assert sorted(i["symbol"] for i in json.loads(edited.output)) == ["cuda_bf16.h", "cuda_fp16.h"]
    other = tmp_path / "other"
    plain = CliRunner().invoke(
        app,
        ["scan", str(write(other, TREE)), "-f", "json", "--no-cache"],
        env={"ROCPORT_CACHE_DIR": str(other)},
    )
    assert plain.exit_code == 1 and not (other / "scan").exists()


def test_notes_on_a_piped_stderr_are_whole_lines(tmp_path):
    """A script reading stderr gets each note on one line, whatever its length, and its text as is
    (a path with brackets in it too)."""
    root = write(tmp_path / "repo", TREE)
    out = tmp_path / ("a-long-directory-name-" * 4) / "scan[ci].json"
    out.parent.mkdir()
    proc = rocport("scan", str(root), "--format", "json", "--output", str(out))
    assert proc.returncode == 1, proc.stderr
    assert f"wrote 4 finding(s) to {out}" in proc.stderr.splitlines()


def test_piped_output_is_one_whole_line_per_finding(tmp_path):
    """Off a terminal (a pipe, a CI log) the table would fold long paths at 80 columns: the report is
    then one line per finding, `file:line: kind construct [fix family]`, each path whole."""
    deep = "srt/layers/" + "very_long_directory_name/" * 4 + "m.py"
    root = write(tmp_path / "repo", {**TREE, deep: TREE["srt/layers/m.py"]})
    proc = rocport("scan", str(root))
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.splitlines() == [
        "rocport scan: 5 finding(s) in 3 file(s)",
        "csrc/k.cu:1: cuda_header cuda_bf16.h [guard_cuda_headers]",
        "csrc/k.cu:5: warp_intrinsic __shfl_xor_sync [warp_compat]",
        "csrc/k.cu:6: warp_size % 32 [warp_size_source]",
        "srt/layers/m.py:2: cuda_only_dep deep_gemm [platform_guarded_import]",
        f"{deep}:2: cuda_only_dep deep_gemm [platform_guarded_import]",
    ]
    written = tmp_path / "scan.txt"
    assert rocport("scan", str(root), "--output", str(written)).returncode == 1
    assert written.read_text().splitlines() == proc.stdout.splitlines()


def test_piped_output_lists_the_files_the_rocm_build_leaves_out(tmp_path):
    from tests.tools.scan.test_rocm_build import BUILD_TREE, profile_file

    repo = write(tmp_path / "repo", BUILD_TREE)
    profile = profile_file(tmp_path)
    proc = rocport("scan", str(repo / "csrc"), "--profile", str(tmp_path / "profile.yaml"))
    assert profile.rocm_sources is not None and proc.returncode == 1, proc.stderr
    assert proc.stdout.splitlines()[1:] == [
        "common.cu:1: cuda_header cuda_bf16.h [guard_cuda_headers]",
        "not in the ROCm build: 1 file(s) with findings",
        "cutlass_gemm.cu: 2 cuda_only_dep, 1 inline_ptx; needs a port of CUTLASS, CuTe, tensor-core/async PTX",
    ]


def test_a_terminal_gets_the_table(tmp_path):
    import os
    import pty

    root = write(tmp_path / "repo", TREE)
    exe = shutil.which("rocport")
    cmd = [exe] if exe else [sys.executable, "-c", "from agent.cli import main; main()"]
    leader, follower = pty.openpty()
    env = {**os.environ, "COLUMNS": "160"}
    proc = subprocess.Popen([*cmd, "scan", str(root)], stdout=follower, stderr=follower, env=env)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal closed: the scan exited
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    assert proc.wait(timeout=120) == 1
    screen = re.sub(r"\x1b\[[0-9;]*m", "", b"".join(chunks).decode("utf-8", "replace"))  # colours off
    assert "┃ kind" in screen and "fix family" in screen and "csrc/k.cu:1" in screen
