"""`rocport scan` starts without typer when its arguments are plain, and then prints, writes and
exits exactly as the typer command does; anything else is typer's to answer, word for word."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.tools.scan.helpers import write

ENTRY = "from agent.cli import main; main()"
"""What the `rocport` console script runs."""
TYPER_ONLY = (
    "from agent.cli import load_commands; from agent.cli.app import app, run; load_commands('scan'); run(app)"
)
"""The typer command alone, as every `rocport scan` ran before the typer-free start."""

TREE = {
    "csrc/k.cu": "#include <cuda_bf16.h>\n#ifndef USE_ROCM\n#include <cub/cub.cuh>\n#endif\n"
    "__device__ float f(float v) { return __shfl_xor_sync(0xffffffff, v, 1); }\n"
    "__device__ int lane() { return threadIdx.x % 32; }\n",
    "csrc/ok.cpp": "int plain() { return 1; }\n",
    "tests/t.cu": "__device__ int w() { return __activemask(); }\n",
    "srt/layers/m.py": "import torch\nimport deep_gemm\n",
    "weird name [x]/n.cu": "__device__ int l() { return threadIdx.x & 31; }\n",
    "blob.cu": b"\x00\x01binary",
}
PROFILE = "name: mine\nhipify_at_build: true\nbuild: {rocm: make}\nlaunch: {command: serve}\n"


def _run(code: str, args: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, str, str]:
    proc = subprocess.run(
        [sys.executable, "-c", code, "scan", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
        check=False,
    )
    return proc.returncode, proc.stdout, proc.stderr


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = write(tmp_path / "repo", TREE)
    (tmp_path / "mine.yaml").write_text(PROFILE)
    (tmp_path / "bad_type.yaml").write_text(PROFILE + "serve_needs_gpu: maybe\n")
    (tmp_path / "coerced.yaml").write_text(PROFILE.replace("true", "'yes'"))
    (tmp_path / "unknown_key.yaml").write_text(PROFILE + "colour: red\n")
    (tmp_path / "broken.yaml").write_text("name: [unclosed\n")
    (tmp_path / "out").mkdir()
    return root


INVOCATIONS = [
    ["repo"],
    ["repo", "-f", "json"],
    ["repo", "--format=sarif"],
    ["repo", "-f", "json", "-o", "out/r.json"],
    ["-f", "sarif", "--output", "out/r.sarif", "repo"],
    ["repo", "-f", "table", "-o", "out/r.txt"],
    ["repo", "--statistics"],
    ["repo", "-f", "json", "--select", "warp_size", "--select", "cuda_header"],
    ["repo", "-f", "json", "--exclude", "srt/*", "--exclude=tests"],
    ["repo", "-f", "json", "--profile", "vllm", "--no-cache", "-j", "1"],
    ["repo", "-f", "json", "-p", "mine.yaml", "--no-hipify"],
    ["repo", "-f", "json", "--profile=mine.yaml", "--hipify", "--include-vendored", "--jobs=2"],
    ["repo", "-f", "json", "-p", "coerced.yaml"],
    ["repo/csrc/k.cu", "-f", "json"],
    ["repo/csrc/ok.cpp", "-f", "json", "--cache"],
    ["--", "repo"],
    # bad input: one line from rocport or typer, exit 2
    ["absent"],
    ["repo", "-p", "nosuch"],
    ["repo", "-p", "bad_type.yaml"],
    ["repo", "-p", "unknown_key.yaml"],
    ["repo", "-p", "broken.yaml"],
    ["repo", "-f", "json", "-o", "absent/dir/r.json"],
    ["repo", "-f", "xml"],
    ["repo", "-j", "0"],
    ["repo", "-j", "two"],
    ["repo", "--jobs"],
    ["repo", "--bogus"],
    ["repo", "repo"],
    [],
    ["repo", "--profile="],
    ["repo", "-pvllm", "-f", "json"],
    ["repo", "-f", "json", "-f", "sarif"],
    ["repo", "--statistics=yes"],
    ["--help"],
]


@pytest.mark.parametrize("args", INVOCATIONS, ids=lambda a: " ".join(a) or "(none)")
def test_the_typer_free_start_prints_and_exits_as_the_typer_command(repo, args):
    env = {**os.environ, "ROCPORT_CACHE_DIR": str(repo.parent / "cache"), "COLUMNS": "120", "NO_COLOR": "1"}
    outputs = []
    for code in (ENTRY, TYPER_ONLY):
        for stale in (repo.parent / "out").iterdir():
            stale.unlink()
        status, stdout, stderr = _run(code, args, repo.parent, env)
        files = {p.name: p.read_text() for p in sorted((repo.parent / "out").iterdir())}
        outputs.append((status, stdout, stderr, files))
    assert outputs[0] == outputs[1]
    status, stdout, stderr, files = outputs[0]
    assert "Traceback" not in stderr
    if status == 2:  # every mistake is one line (typer's usage errors included)
        assert len(stderr.strip().splitlines()) == 1 and stderr.startswith("rocport: error:"), stderr


@pytest.mark.parametrize("unbuffered", [True, False])
def test_a_reader_that_stops_early_gets_the_same_exit_as_from_the_typer_command(repo, unbuffered):
    """stdout's reader goes away before the report is written (`rocport scan ... | head -0`): the
    exit status and stderr are the typer command's, whether the write or the flush at exit fails."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    env = {
        **env,
        "ROCPORT_CACHE_DIR": str(repo.parent / "cache"),
        **({"PYTHONUNBUFFERED": "1"} if unbuffered else {}),
    }
    outcomes = []
    for code in (ENTRY, TYPER_ONLY):
        read, write_end = os.pipe()
        os.close(read)  # nobody will read: every write raises EPIPE
        with os.fdopen(write_end, "w") as closed_pipe:
            proc = subprocess.run(
                [sys.executable, "-c", code, "scan", "repo", "-f", "json"],
                stdout=closed_pipe,
                stderr=subprocess.PIPE,
                text=True,
                cwd=repo.parent,
                env=env,
                timeout=120,
                check=False,
            )
        outcomes.append((proc.returncode, proc.stderr))
    assert outcomes[0] == outcomes[1], outcomes
    assert "Traceback" not in outcomes[0][1]


WATCHED = ("typer", "pydantic", "rich", "_hashlib", "typing", "dataclasses", "pathlib")
"""Modules a plain scan process does without: typer/pydantic/rich ~0.3 s, OpenSSL's _hashlib ~4 ms,
typing ~4 ms (tools/__init__.py), dataclasses ~7 ms with the records it made (tools/record_base.py)
and pathlib ~4 ms (tools/files.py path_text) of every start."""


def _modules_at_exit(args: list[str], cwd: Path, watched: tuple[str, ...] = WATCHED) -> set[str]:
    """The watched modules rocport imported: those the interpreter loaded before it (an editable
    install's import hook imports pathlib in every process of its venv) are not rocport's doing."""
    probe = (
        f"import atexit, sys\nWATCHED = {watched!r}\nBEFORE = set(sys.modules)\n"
        "atexit.register(lambda: print('loaded:', *sorted(m for m in WATCHED if m in set(sys.modules) - BEFORE),"
        " file=sys.stderr))\n" + ENTRY
    )
    _, _, stderr = _run(probe, args, cwd, {**os.environ, "ROCPORT_CACHE_DIR": str(cwd / "cache")})
    return set(stderr.strip().splitlines()[-1].split()[1:])


def test_a_plain_json_scan_imports_neither_typer_nor_pydantic(repo):
    # nor OpenSSL (hashlib's _hashlib, ~4 ms a start): findings are signed and the result cache keyed by
    # CPython's own sha1/sha256 (tools/digests.py); nor typing, C++ and Python rules included
    assert _modules_at_exit(["repo", "-f", "json", "-o", "out/r.json", "-p", "vllm"], repo.parent) == set()
    report = json.loads((repo.parent / "out" / "r.json").read_text())
    assert report and all(f["signature"] for f in report)  # it did scan, and signed what it found
    assert {f["file"].rsplit(".", 1)[-1] for f in report} == {"cu", "py"}


def test_a_piped_table_scan_imports_none_of_them_either(repo):
    # nor json, which only the json and sarif formats write
    assert _modules_at_exit(["repo", "-p", "vllm", "--statistics"], repo.parent, (*WATCHED, "json")) == set()
    assert _modules_at_exit(["repo", "-p", "vllm"], repo.parent, (*WATCHED, "json")) == set()


def test_a_scan_that_meets_no_python_candidate_leaves_ast_and_the_python_rules_unloaded(repo):
    """~2.5 ms of every start: a C++ file or tree needs neither; a tree with a Python finding does."""
    python_rules = (*WATCHED, "ast", "tools.scan.python_rules", "glob")  # glob: only a CMake file(GLOB)
    assert _modules_at_exit(["repo/csrc/k.cu", "-f", "json", "-j", "1"], repo.parent, python_rules) == set()
    assert _modules_at_exit(["repo", "-f", "json", "-j", "1"], repo.parent, python_rules) == {
        "ast",
        "tools.scan.python_rules",
    }


def test_what_only_typer_can_answer_is_answered_by_typer(repo):
    assert "typer" in _modules_at_exit(["--help"], repo.parent)
    assert "typer" in _modules_at_exit(["repo", "-f", "xml"], repo.parent)
    # a profile the plain reader cannot vouch for is validated by pydantic
    assert "pydantic" in _modules_at_exit(["repo", "-f", "json", "-p", "coerced.yaml"], repo.parent)


def test_the_typer_command_has_exactly_the_declared_options():
    """The typer-free parser reads scan_options.OPTIONS; the typer command must take the same."""
    import typer

    from agent.cli import app
    from agent.cli.scan_options import OPTIONS

    group = typer.main.get_command(app)
    command = group.commands["scan"]  # type: ignore[attr-defined]
    params = {p.name: p for p in command.params}
    assert [p.name for p in command.params] == ["path", *(o.dest for o in OPTIONS)]
    assert params["path"].required and params["path"].param_type_name == "argument"
    for opt in OPTIONS:
        param = params[opt.dest]
        assert list(param.opts) == list(opt.flags), opt.dest
        assert list(param.secondary_opts) == ([opt.off] if opt.off else []), opt.dest
        assert param.multiple == (opt.kind == "many"), opt.dest
        assert param.is_flag == (opt.kind in ("flag", "switch")), opt.dest
        default = param.default if not hasattr(param.default, "value") else param.default.value
        assert default == opt.default, opt.dest
        annotation = param.type_descriptor.annotation
        if opt.choices:
            assert tuple(member.value for member in annotation) == opt.choices
        elif opt.minimum is not None:
            assert annotation is int and param.type_descriptor.parameter_info.min == opt.minimum
        elif opt.kind == "value":
            assert annotation is (Path if opt.is_path else str), opt.dest


def test_after_setup_a_scan_process_compiles_none_of_rocports_own_modules(repo, rocm_image):
    """Where PYTHONDONTWRITEBYTECODE is set (this project's CI machines), Python never caches
    compiled modules: .ci/setup byte-compiles rocport's own, as pip does for an installed package,
    so a `rocport scan` process loads them from bytecode instead of compiling each (~30 ms a start)."""
    import importlib.util

    root = Path(__file__).resolve().parents[2]
    venv = Path(sys.prefix)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPYCACHEPREFIX", "PYTHONDONTWRITEBYTECODE")}
    cached = Path(importlib.util.cache_from_source(str(root / "tools" / "scan" / "repo.py")))
    cached.unlink(missing_ok=True)  # setup must write it again
    setup = subprocess.run(
        ["bash", str(root / ".ci" / "setup")],
        capture_output=True,
        text=True,
        env={**env, "VENV": str(venv)},
        timeout=600,
        check=False,
    )
    assert setup.returncode == 0, setup.stdout + setup.stderr
    assert cached.is_file()
    env = {**env, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONVERBOSE": "1"}
    status, _, stderr = _run(
        ENTRY, ["repo", "-f", "json", "-o", "out/r.json", "-p", "vllm"], repo.parent, env
    )
    assert status == 1  # findings remain
    ours = tuple(f"{root / package}/" for package in ("agent", "tools"))
    from_source = [
        line
        for line in stderr.splitlines()
        if line.startswith(tuple(f"# code object from {p}" for p in ours))
    ]
    from_bytecode = [
        line
        for line in stderr.splitlines()
        if line.startswith(tuple(f"# code object from '{p}" for p in ours))
    ]
    assert from_source == []
    assert len(from_bytecode) > 30  # the scan's modules (tools.scan, tools.cpp, agent.cli's scan start)
