"""`rocport` command line. Each module below adds its commands to the shared typer app.

A process started for one command (`rocport port ...`, `python -m agent.cli scan ...`, or
`python -c "from agent.cli import main; main()" runs`) loads only that command's module: importing
every module costs about a second of CPU (Docker, LangGraph, numpy), paid again by every short
command a user or a script runs. Imported any other way (tests, `rocport --help`, no command, an
unknown command), every command is loaded, so help lists them all and typos get typer's answer.
`rocport scan ...` with plain arguments does not import typer at all (agent/cli/scan_argv.py).
"""

import os
import sys
from importlib import import_module
from itertools import pairwise

COMMAND_MODULES = {
    "bench": "bench",
    "demo": "evals",
    "diagnose": "diagnose",
    "doctor": "doctor",
    "eval": "evals",
    "fix": "fix",
    "image": "image",
    "port": "port",
    "pr": "pr",
    "report": "pr",
    "runs": "port",
    "scan": "scan",
    "show": "show",
    "sweep": "sweep",
    "tune": "tune",
    "weights": "weights",
}
"""Each top-level command (or command group) and the module under agent/cli that registers it."""


def _started_as_command() -> str | None:
    """The command this process was started to run, when it was started as the CLI; else None.

    Under `python -m agent.cli`, this package is imported while runpy still looks for its __main__,
    and sys.argv[0] then reads "-m" (the path of __main__.py comes later)."""
    if os.path.basename(sys.argv[0]) not in ("rocport", "__main__.py", "-c") and not _run_as_module():
        return None
    command = next((arg for arg in sys.argv[1:] if not arg.startswith("-")), None)
    return command if command in COMMAND_MODULES else None


def _run_as_module() -> bool:
    """Started as `python -m agent.cli` (or `-m agent.cli.__main__`), not another module run with -m."""
    if sys.argv[0] != "-m":
        return False
    argv = sys.orig_argv
    return any(a == "-m" and b in ("agent.cli", "agent.cli.__main__") for a, b in pairwise(argv))


def load_commands(command: str | None) -> None:
    """Register `command`'s module on `app`, or every module when command is None."""
    names = [COMMAND_MODULES[command]] if command else sorted(set(COMMAND_MODULES.values()))
    for name in names:
        import_module(f"agent.cli.{name}")


_COMMAND = _started_as_command()
if _COMMAND != "scan":  # a scan process first tries to start without typer (see main)
    from agent.cli.app import app

    load_commands(_COMMAND)


def main() -> None:
    if _COMMAND == "scan":
        if sys.argv[1:2] == ["scan"]:  # exits when its arguments parse without typer
            from agent.cli.scan_argv import run_scan_without_typer

            run_scan_without_typer(sys.argv[2:])
        load_commands("scan")
    from agent.cli.app import app, run

    run(app)


__all__ = ["COMMAND_MODULES", "app", "main"]
