"""`rocport` command line. Each module below adds its commands to the shared typer app."""
from agent.cli.app import app

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
