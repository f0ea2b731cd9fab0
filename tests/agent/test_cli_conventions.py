"""CLI conventions a user notices: `port` first in help, metavars in capitals with nothing after a flag,
examples under every command, listings in table/json/plain that never cut an id, and `rocport show`
printing a run's trajectory."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.tools.run_fixture import make_run

ROCPORT = [sys.executable, "-m", "agent.cli"]


def _rocport(home, *args, columns="100"):
    env = {**os.environ, "ROCPORT_HOME": str(home), "COLUMNS": columns}
    return subprocess.run(
        [*ROCPORT, *args], capture_output=True, text=True, env=env, timeout=120, stdin=subprocess.DEVNULL
    )


def _command_paths():
    import typer.main

    from agent.cli import app
    from agent.cli.conventions import apply

    root = apply(typer.main.get_command(app))
    paths = []
    for name, cmd in root.commands.items():
        paths.append([name])
        paths += [[name, sub] for sub in getattr(cmd, "commands", {})]
    return paths


def test_port_is_the_first_command_in_help(tmp_path):
    out = _rocport(tmp_path, "--help", columns="200")
    commands = [
        ln.split()[1]
        for ln in out.stdout.splitlines()
        if ln.startswith("│ ") and len(ln.split()) > 2 and not ln.split()[1].startswith("-")
    ]
    assert commands[:3] == ["port", "runs", "show"], out.stdout


@pytest.mark.parametrize("path", _command_paths(), ids=" ".join)
def test_every_command_has_examples_and_clean_metavars(tmp_path, path):
    out = _rocport(tmp_path, *path, "--help")
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "Examples:" in text and f"rocport {' '.join(path)}" in text.split("Examples:")[1]
    for noise in ("<bool>", "<str>", "<int>", "<path>", "<float>"):
        assert noise not in text.split("Examples:")[0], f"{noise} in `rocport {' '.join(path)} --help`"
    [usage] = [ln for ln in text.splitlines() if "Usage:" in ln]
    assert "{" not in usage and "<" not in usage, usage


def test_runs_lists_whole_ids_in_every_format(tmp_path, monkeypatch):
    from agent.loop.store import RunStore

    home = tmp_path / "home"
    monkeypatch.setenv("ROCPORT_HOME", str(home))
    RunStore().create(
        "20261202-120000-a-very-long-framework-name-ab12",
        "a-very-long-framework-name",
        "/srv/checkouts/a/very/long/path/to/the/framework/checkout",
        "main",
    )
    table = _rocport(home, "runs", columns="")  # piped, no COLUMNS: nothing wraps, nothing is cut
    row = [ln for ln in table.stdout.splitlines() if "20261202" in ln]
    assert len(row) == 1 and "20261202-120000-a-very-long-framework-name-ab12" in row[0]
    plain = _rocport(home, "runs", "--format", "plain").stdout.splitlines()
    assert plain[0].split("\t")[0] == "run id" and plain[1].split("\t")[0].endswith("-ab12")
    [record] = json.loads(_rocport(home, "runs", "--format", "json").stdout)
    assert record["run_id"] == "20261202-120000-a-very-long-framework-name-ab12"
    assert json.loads(_rocport(tmp_path / "empty", "runs", "-f", "json").stdout) == []


def test_show_prints_the_trajectory_of_a_run(tmp_path):
    home = tmp_path / "home"
    run = make_run(home)
    events = [json.loads(ln) for ln in (run / "events.jsonl").read_text().splitlines()]
    events.insert(
        3, {"event": "command", "cmd": "python3 build.py --backend rocm --arch gfx942", "ts": 1021.0}
    )
    events.insert(
        4,
        {
            "event": "build_done",
            "number": 1,
            "ok": False,
            "failures": 2,
            "duration_s": 30.0,
            "log": "logs/002-build-1.log",
            "ts": 1029.0,
        },
    )
    events.insert(
        7,
        {
            "event": "patch_kept",
            "proposer": "rule:headers",
            "kind": "cuda_header",
            "file": "csrc/k.cu",
            "commit": "abcdef1234567",
            "ts": 1051.0,
        },
    )
    (run / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    out = _rocport(home, "show", run.name)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert text.index("▶ checkout") < text.index("▶ build") < text.index("$ python3 build.py --backend rocm")
    assert "build #1: 2 failing in 30s (logs/002-build-1.log)" in text
    assert "kept   rule:headers fix for cuda_header csrc/k.cu -> abcdef1234" in text
    assert "+21.0s" in text and "green" in text.splitlines()[0]
    assert len(json.loads(_rocport(home, "show", run.name, "-f", "json").stdout)) == len(events)
    missing = _rocport(home, "show", "nosuchrun")
    assert missing.returncode == 2 and missing.stderr.startswith("rocport: error: no run 'nosuchrun'")
