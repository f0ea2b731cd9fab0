"""`rocport` command line. Each module below adds its commands to the shared typer app.

Run as `rocport diagnose ...` or `rocport scan ...`, only that command's module is loaded: a user
pastes a log or points at a checkout and wants the answer at once, and the other modules import
Docker, LangGraph and numpy. Imported any other way (tests, `python -c`), every command is loaded.
"""
import sys
from importlib import import_module
from pathlib import Path

from agent.cli.app import app

LIGHT_COMMANDS = ("diagnose", "scan")
"""Commands that need nothing but their own module (no Docker, no orphan cleanup at start)."""


def _light_command() -> str | None:
    """The light command this process was started as (`rocport scan ...`), else None."""
    if Path(sys.argv[0]).name not in ("rocport", "__main__.py"):
        return None
    command = next((arg for arg in sys.argv[1:] if not arg.startswith("-")), None)
    return command if command in LIGHT_COMMANDS else None


if _light_command():
    import_module(f"agent.cli.{_light_command()}")
else:
    # Command modules, one line each; importing one registers its commands on `app`.
    # The order is the order of `rocport --help`: the main job first, then what it produces, then the parts.
    from agent.cli import port  # noqa: E402,F401
    from agent.cli import show  # noqa: E402,F401
    from agent.cli import pr  # noqa: E402,F401
    from agent.cli import tune  # noqa: E402,F401
    from agent.cli import evals  # noqa: E402,F401
    from agent.cli import sweep  # noqa: E402,F401
    from agent.cli import bench  # noqa: E402,F401
    from agent.cli import scan  # noqa: E402,F401
    from agent.cli import fix  # noqa: E402,F401
    from agent.cli import diagnose  # noqa: E402,F401
    from agent.cli import weights  # noqa: E402,F401
    from agent.cli import doctor  # noqa: E402,F401
    from agent.cli import image  # noqa: E402,F401


def main() -> None:
    from agent.cli.app import run

    run(app)


__all__ = ["app", "main"]
