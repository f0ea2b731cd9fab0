"""A process started for one command loads only that command's module, and none is forgotten."""

from __future__ import annotations

import subprocess
import sys

import agent.cli

PROBE = (
    "import sys; from agent.cli import main\n"
    "try:\n    main()\nexcept SystemExit:\n    pass\n"
    "watched = ('docker', 'langgraph', 'pygments')\n"
    "print(' '.join(sorted(m for m in sys.modules if m.startswith('agent.cli.') or m in watched)))"
)


def _loaded(*argv: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, check=False, timeout=120
    )
    return set(out.stdout.strip().splitlines()[-1].split())


def test_every_registered_command_maps_to_the_module_that_registers_it():
    registered = {c.name or c.callback.__name__ for c in agent.cli.app.registered_commands}
    registered |= {g.name for g in agent.cli.app.registered_groups}
    assert registered == set(agent.cli.COMMAND_MODULES)


def test_a_command_process_loads_its_own_module_only():
    runs = _loaded("runs", "--help")
    assert "agent.cli.port" in runs
    assert not runs & {"agent.cli.sweep", "agent.cli.tune", "agent.cli.bench", "agent.cli.weights"}
    diagnose = _loaded("diagnose", "--help")
    assert "agent.cli.diagnose" in diagnose and not diagnose & {"docker", "langgraph", "agent.cli.port"}


def test_python_dash_m_loads_the_command_module_only_too():
    """`python -m agent.cli CMD` (how scripts and these tests start rocport) is as lean as `rocport CMD`.
    -X importtime lists the modules `import` statements load (not import_module's: the command module
    itself is seen through what it imports)."""
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "agent.cli", "diagnose", "--help"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert out.returncode == 0 and "Usage: rocport diagnose" in out.stdout, out.stderr[-2000:]
    imported = {
        line.rsplit("|", 1)[-1].strip() for line in out.stderr.splitlines() if line.startswith("import time:")
    }
    assert "tools.diagnose" in imported
    assert not imported & {"docker", "langgraph", "tools.doctor", "agent.tune.run", "agent.cli.bench_live"}


def test_help_and_unknown_commands_still_see_every_command():
    assert {f"agent.cli.{m}" for m in set(agent.cli.COMMAND_MODULES.values())} <= _loaded("--help")
    assert "agent.cli.sweep" in _loaded("nosuchcommand")


def test_a_port_whose_job_is_wrong_is_answered_before_the_loop_is_imported(tmp_path):
    """LangGraph and the port loop are ~1 s of CPU to import, the Docker SDK ~0.13 s (the orphan check at
    every start asks the daemon's socket directly when it has nothing to remove): a mistyped job path or
    key is a one-line error without them. A run it must look up (--resume) still loads the loop."""
    bad_key = tmp_path / "job.yaml"
    bad_key.write_text("framework: {profile: tinyserve}\nmodle: {path: /x}\n")
    for argv in (["-c", str(tmp_path / "absent.yaml")], ["-c", str(bad_key)]):
        assert not {"langgraph", "docker"} & _loaded("port", *argv), argv
    assert "langgraph" in _loaded("port", "--resume", "no-such-run")


def test_listing_runs_or_a_wrong_job_loads_no_syntax_highlighter():
    """pygments (~10 ms of every start, through rich.syntax) is for showing an LLM patch under review."""
    assert "pygments" not in _loaded("runs", "--limit", "1")
    assert "pygments" not in _loaded("port", "-c", "/absent/job.yaml")


def test_a_review_at_the_terminal_shows_the_diff_and_takes_the_answer():
    from click.testing import CliRunner
    from rich.console import Console

    from agent.cli.port import _ask_review

    pending = [
        {
            "index": 3,
            "proposer": "llm",
            "kind": "inline_ptx",
            "rationale": "use __builtin_amdgcn_readfirstlane",
            "diff": '--- a/k.cu\n+++ b/k.cu\n@@ -1 +1 @@\n-asm("mov.u32 %0, %laneid;");\n+lane = __lane_id();\n',
        }
    ]
    with CliRunner().isolation(input="y\n") as streams:  # stdin answers, stdout captured
        console = Console(file=sys.stdout, force_terminal=False, width=100)
        decisions = _ask_review(console, pending)
        shown = streams[0].getvalue().decode()
    assert decisions == {3: True}
    assert "LLM patch (llm) for inline_ptx" in shown and "+lane = __lane_id();" in shown
    assert "Apply this patch?" in shown
