"""Bad and awkward input: binary files, non-UTF-8 bytes, huge logs, empty logs, missing files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent.cli import app
from tools.diagnose import DiagnoseError, diagnose_file, diagnose_text

HEAD_ERROR = (
    b"/build/proj/csrc/first.cu:3:5: error: use of undeclared identifier '__shfl_xor_sync'\n"
    b"    3 |   x = __shfl_xor_sync(m, x, 1);\n      |     ^\n"
    b"1 error generated when compiling for gfx942.\n"
)
TAIL_ERROR = (
    b"Traceback (most recent call last):\n"
    b'  File "/srv/tinyserve/tinyserve/model.py", line 9, in load_weights\n'
    b"    param = params_dict[name]\n"
    b"KeyError: 'model.layers.4.eh_proj.weight'\n"
)


def _filler_block() -> bytes:
    lines = []
    for i in range(2000):
        lines.append(
            f"[{i}/90000] /opt/rocm/bin/hipcc -O3 -c csrc/k{i}.hip -o build/k{i}.o --offload-arch=gfx942\n"
        )
        lines.append(f"INFO 12-01 10:00:{i % 60:02d} [loader.py:12] loaded shard {i} of 4000 \u2713\n")
        lines.append(
            "Loading safetensors checkpoint shards:  42% Completed | 21/50 [00:10<00:14,  2.01it/s]\r\n"
        )
    raw = "".join(lines).encode()
    return raw + b"latin-1 bytes from a locale-less tool: \xe9\xe8\xff caf\xe9\n"


def _write_big_log(path: Path, size: int) -> None:
    block = _filler_block()
    with path.open("wb") as out:
        out.write(HEAD_ERROR)
        written = 0
        while written < size:
            out.write(block)
            written += len(block)
        out.write(b"x" * 300_000 + b"\n")  # one absurdly long line: cut, not kept whole
        out.write(TAIL_ERROR)


@pytest.mark.slow
def test_100mb_log_streams_with_bounded_memory_and_finds_both_ends(tmp_path):
    log = tmp_path / "huge.log"
    _write_big_log(log, 100 * 1024 * 1024)
    # VmHWM is this process's own peak RSS (ru_maxrss would carry pytest's over the fork)
    probe = (
        "import json, re, sys\n"
        "from tools.diagnose import diagnose_file\n"
        "failures = diagnose_file(sys.argv[1])\n"
        "hwm = int(re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1))\n"
        "print(json.dumps({'failures': [[f.kind, f.file, f.line, f.symbol] for f in failures],\n"
        "                  'maxrss_kb': hwm}))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", probe, str(log)],
        capture_output=True,
        text=True,
        check=False,
        cwd=Path(__file__).resolve().parents[3],
        timeout=900,
    )
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    assert result["failures"] == [
        ["warp_intrinsic", "/build/proj/csrc/first.cu", 3, "__shfl_xor_sync"],
        ["weight_name", "/srv/tinyserve/tinyserve/model.py", 9, "model.layers.4.eh_proj.weight"],
    ]
    # a reader that held the log (100 MiB of text) could not stay under this
    assert result["maxrss_kb"] < 80 * 1024, result["maxrss_kb"]


def test_non_utf8_bytes_are_tolerated(tmp_path):
    log = tmp_path / "latin1.log"
    log.write_bytes(
        b"caf\xe9 \xff\xfe build\n"
        + HEAD_ERROR.replace(b"__shfl_xor_sync", b"__shfl_xor_sync")
        + b"\xc3\x28 broken utf-8\n"
    )
    failures = diagnose_file(log)
    assert [(f.kind, f.symbol) for f in failures] == [("warp_intrinsic", "__shfl_xor_sync")]


def test_binary_file_is_a_clear_error(tmp_path):
    blob = tmp_path / "model.safetensors"
    blob.write_bytes(b"\x00\x01\x02ELF" * 1000)
    with pytest.raises(DiagnoseError, match="binary"):
        diagnose_file(blob)
    result = CliRunner().invoke(app, ["diagnose", str(blob)])
    assert result.exit_code == 2
    assert "looks like a binary file" in result.output
    assert "Traceback" not in result.output


def test_missing_and_directory_paths_are_clear_errors(tmp_path):
    runner = CliRunner()
    missing = runner.invoke(app, ["diagnose", str(tmp_path / "nope.log")])
    assert missing.exit_code == 2 and "log file not found" in missing.output
    folder = runner.invoke(app, ["diagnose", str(tmp_path)])
    assert folder.exit_code == 2 and "is a directory" in folder.output


def test_empty_log_says_so(tmp_path):
    empty = tmp_path / "empty.log"
    empty.write_text("")
    assert diagnose_file(empty) == []
    assert diagnose_text("") == []
    result = CliRunner().invoke(app, ["diagnose", str(empty)])
    assert result.exit_code == 0
    assert "is empty" in result.output
    as_json = CliRunner().invoke(app, ["diagnose", str(empty), "--json"])
    assert json.loads(as_json.output) == []


def test_clean_log_reports_no_failures(tmp_path):
    log = tmp_path / "ok.log"
    log.write_text("[1/2] /opt/rocm/bin/hipcc -c a.hip -o a.o\n[2/2] Linking HIP shared module _C.so\n")
    result = CliRunner().invoke(app, ["diagnose", str(log)])
    assert result.exit_code == 0 and "No failures found" in result.output


def test_pathological_lines_and_chains_stay_bounded():
    giant = "x" * 1_000_000
    log = (
        f"csrc/a.cu:1:1: error: use of undeclared identifier '__syncwarp' {giant}\n{giant}\n"
        + 'Traceback (most recent call last):\n  File "/a.py", line 1, in f\n    g()\nValueError: boom\n\n'
        "During handling of the above exception, another exception occurred:\n\n"
        * 500
        + 'Traceback (most recent call last):\n  File "/a.py", line 2, in f\n    h()\nValueError: last\n'
    )
    failures = diagnose_text(log)
    assert [f.kind for f in failures] == ["warp_intrinsic", "python_error"]
    assert all(len(f.excerpt) <= 8000 and len(f.message) <= 500 for f in failures)


LONG_LINE_SHAPES = {
    "spaces": " " * 63000 + "x",
    "colons": "a:" * 32000,
    "parens": "(" * 64000,
    "quotes": "'" * 64000,
    "link": "undefined reference to `" + "a" * 60000,
    "errors": "error: " * 9000,
    "brackets": "[" * 64000,
    "frames": 'File "' * 10000,
    "sizes": "torch.Size([" * 5000,
    "versus": "[1, 2] vs " * 6000,
    "digits": "1:" * 32000,
    "slashes": "/a" * 32000,
}


@pytest.mark.timeout(300)
@pytest.mark.parametrize("shape", sorted(LONG_LINE_SHAPES))
def test_long_lines_of_any_shape_finish(shape):
    """Guards against regexes that backtrack quadratically (two were found this way)."""
    log = "\n".join(
        [LONG_LINE_SHAPES[shape]] * 3 + ["csrc/a.cu:1:1: error: unknown type name '__nv_bfloat16'"]
    )
    failures = diagnose_text(log)
    assert failures[-1].kind == "bf16_type"
