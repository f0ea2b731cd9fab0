"""Bad job, sweep and profile files and CLI usage mistakes: one `rocport: error:` line naming the file,
the line or the option, exit 2, no traceback.
"""

from __future__ import annotations

import pytest

from tests.agent.cli_bad_input.cli import REPO_ROOT, one_line_error, rocport


def test_port_malformed_job_yaml_names_file_and_line(tmp_path, home):
    (tmp_path / "job.yaml").write_text("framework:\n  profile: tinyserve\n bad: [\n")
    one_line_error(rocport(home, "port", "-c", "job.yaml"), "job.yaml", "line 3", "malformed YAML")


def test_port_unknown_key_in_yaml_and_override(tmp_path, home):
    (tmp_path / "job.yaml").write_text("framework:\n  profile: tinyserve\n  colour: red\n")
    one_line_error(
        rocport(home, "port", "-c", "job.yaml"), "unknown key framework.colour", "line 3", "spelling"
    )
    one_line_error(
        rocport(home, "port", "-c", "framework.profile=tinyserve", "-c", "budget.builds=3"),
        "unknown key budget",
        "spelling",
    )


def test_port_missing_job_file_and_bad_value(home):
    one_line_error(rocport(home, "port", "-c", "nope.yaml"), "nope.yaml", "not found")
    one_line_error(
        rocport(home, "port", "-c", "framework.profile=tinyserve", "-c", "strategy=magic"), "strategy"
    )


def test_profile_malformed_unknown_or_missing(tmp_path, home):
    (tmp_path / "prof.yaml").write_text("name: x\nbuild: [\n")
    one_line_error(
        rocport(home, "port", "-c", "framework.profile=prof.yaml"),
        "prof.yaml",
        "line 3",
        "malformed YAML",
        "fix the syntax",
    )
    one_line_error(rocport(home, "port", "-c", "framework.profile=nosuch"), "nosuch", "tinyserve")
    one_line_error(rocport(home, "scan", str(tmp_path), "--profile", "prof.yaml"), "prof.yaml")


def test_sweep_malformed_unknown_key_and_missing_file(tmp_path, home):
    (tmp_path / "bad.yaml").write_text("name: x\nframeworks: [\n")
    one_line_error(rocport(home, "sweep", "plan", "bad.yaml"), "bad.yaml", "malformed YAML")
    example = (REPO_ROOT / "agent/sweep/examples/tinyserve-nightly.yaml").read_text()
    (tmp_path / "typo.yaml").write_text(example + "colour: red\n")
    one_line_error(rocport(home, "sweep", "plan", "typo.yaml"), "colour", "unknown key", "spelling")
    for sub in ("plan", "run", "report"):
        one_line_error(rocport(home, "sweep", sub, "nosweep.yaml"), "nosweep.yaml", "pass the path")


def test_binary_file_given_as_yaml(tmp_path, home):
    (tmp_path / "blob.yaml").write_bytes(bytes(range(128, 256)) * 8)
    one_line_error(rocport(home, "port", "-c", "blob.yaml"), "blob.yaml", "not a text file")
    one_line_error(
        rocport(home, "port", "-c", f"framework.profile={tmp_path / 'blob.yaml'}"), "not a text file"
    )
    one_line_error(
        rocport(home, "scan", str(tmp_path), "--profile", str(tmp_path / "blob.yaml")), "not a text file"
    )
    one_line_error(rocport(home, "sweep", "plan", "blob.yaml"), "blob.yaml", "not a text file")


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["bench", "--url", "http://x"], ["--url", "--base-url", "rocport bench --help"]),
        (["prot"], ["no such command", "rocport --help"]),
        (["diagnose"], ["missing argument", "rocport diagnose --help"]),
        (["runs", "--limit", "many"], ["--limit", "integer"]),
        (["runs", "--limit", "0"], ["--limit", "greater than or equal to 1"]),
        (["scan", ".", "-f", "xml"], ["xml", "sarif"]),
    ],
)
def test_usage_mistakes_are_one_line_too(home, args, needles):
    one_line_error(rocport(home, *args), *needles)


def test_no_command_still_prints_the_help(home):
    result = rocport(home)
    assert "Traceback" not in result.stderr and "port" in result.stdout + result.stderr
    assert "Commands" in result.stdout + result.stderr
