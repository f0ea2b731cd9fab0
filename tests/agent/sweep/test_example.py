"""The bundled sweep example runs as written: its framework is rocport's fixture made a git repo with the
refs it lists, and its checkpoints are created under ROCPORT_HOME (not the user's real home)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import git

EXAMPLE = Path(__file__).resolve().parents[3] / "agent/sweep/examples/tinyserve-nightly.yaml"
WORKFLOW = EXAMPLE.parent / "nightly-workflow.yml"


def _rocport(home: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "agent.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "ROCPORT_HOME": str(home)},
        timeout=600,
    )


def test_example_prepares_its_repo_and_checkpoints_under_rocport_home(tmp_path, monkeypatch):
    from agent.sweep.cells import expand
    from agent.sweep.fixture import prepare
    from agent.sweep.spec import SweepSpec
    from agent.yamlconf import load_yaml_model

    home = tmp_path / "home"
    monkeypatch.setenv("ROCPORT_HOME", str(home))
    spec = prepare(load_yaml_model(EXAMPLE, SweepSpec))
    repo = git.Repo(spec.frameworks[0].repo)
    assert Path(repo.working_dir).is_relative_to(home)
    for cell in expand(spec):
        repo.commit(cell.git_ref)  # every ref the example lists exists
        ckpt = Path(cell.model.path)
        assert ckpt.is_relative_to(home) and (ckpt / "config.json").is_file()
        assert any(ckpt.glob("*.safetensors"))
    again = prepare(load_yaml_model(EXAMPLE, SweepSpec))  # a second night reuses them
    assert again.frameworks[0].repo == spec.frameworks[0].repo


def test_plan_of_the_example_lists_whole_cell_names_in_every_format(tmp_path):
    plain = _rocport(tmp_path / "home", "sweep", "plan", str(EXAMPLE), "--format", "plain")
    assert plain.returncode == 0, plain.stderr
    lines = plain.stdout.splitlines()
    assert lines[0].split("\t")[0] == "cell" and len(lines) == 5
    assert "tinyserve@main@nightly/tiny-moe/mi300x/smoke" in [ln.split("\t")[0] for ln in lines]
    table = _rocport(tmp_path / "home", "sweep", "plan", str(EXAMPLE))
    assert "tinyserve@main@nightly/tiny-moe-s7/mi300x/smoke" in table.stdout  # piped: never cut to `tiny@…`
    data = json.loads(_rocport(tmp_path / "home", "sweep", "plan", str(EXAMPLE), "--format", "json").stdout)
    assert [d["ref"] for d in data].count("v0.1") == 2


def test_fail_on_rejects_what_it_does_not_know(tmp_path):
    out = _rocport(tmp_path / "home", "sweep", "report", str(EXAMPLE), "--fail-on", "errors")
    assert out.returncode == 2 and out.stderr.startswith(
        "rocport: error: --fail-on errors: use error, regression"
    )


def test_workflow_commands_parse_and_keep_the_results_outside_the_checkout(tmp_path):
    import shlex
    import tomllib

    import yaml

    flow = yaml.safe_load(WORKFLOW.read_text())
    assert "github.workspace }}/../" in flow["env"]["ROCPORT_HOME"]  # checkout cleans the workspace, not this
    steps = flow["jobs"]["sweep"]["steps"]
    uses = [s.get("uses", "").split("@")[0] for s in steps]
    assert (
        "actions/cache/restore" in uses and "actions/cache/save" in uses and "actions/upload-artifact" in uses
    )
    script = "\n".join(s.get("run", "") for s in steps).replace("\\\n", " ")
    extras = tomllib.loads((EXAMPLE.parents[3] / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    for wanted in [w for line in script.splitlines() if "pip" in line for w in line.split("[")[1:]]:
        assert wanted.split("]")[0] in extras
    commands = [
        shlex.split(line.strip().replace('"$SWEEP"', str(EXAMPLE)))
        for line in script.splitlines()
        if line.strip().startswith("rocport ")
    ]
    assert [c[1:3] for c in commands] == [["sweep", "run"], ["sweep", "report"]]
    for cmd in commands:
        out = _rocport(tmp_path / "home", *cmd[1:], "--help")  # an unknown option is an error before --help
        assert out.returncode == 0, out.stderr
