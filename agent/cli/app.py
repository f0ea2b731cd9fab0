"""The `rocport` typer application; command modules register themselves on `app`."""
from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

import typer

app = typer.Typer(
    name="rocport",
    help="Port LLM serving frameworks and new open models to AMD GPUs (ROCm).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def rocport_version() -> str:
    try:
        return version("rocport")
    except PackageNotFoundError:
        return "0+unknown"


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"rocport {rocport_version()}")
        raise typer.Exit()


@app.callback()
def _root(
    show_version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True,
                                      help="Print the version and exit."),
) -> None:
    """Port LLM serving frameworks and new open models to AMD GPUs (ROCm)."""
    from sandboxes.orphans import cleanup_orphans  # a killed earlier run may have left containers

    cleanup_orphans()


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print a one-line error for the user and return the Exit to raise."""
    typer.echo(f"rocport: error: {message}", err=True)
    return typer.Exit(code)
