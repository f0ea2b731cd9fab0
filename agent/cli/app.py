"""The `rocport` typer application; command modules register themselves on `app`."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="rocport",
    help="Port LLM serving frameworks and new open models to AMD GPUs (ROCm).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def rocport_version() -> str:
    """The installed version; importlib.metadata is loaded only when it is asked for."""
    from agent.version import rocport_version as installed

    return installed()


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"rocport {rocport_version()}")
        raise typer.Exit()


NO_CONTAINER_COMMANDS = ("diagnose", "scan")
"""Commands that read files only: they start without asking the Docker daemon anything."""


@app.callback()
def _root(
    ctx: typer.Context,
    show_version: bool = typer.Option(
        False, "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Port LLM serving frameworks and new open models to AMD GPUs (ROCm)."""
    if ctx.invoked_subcommand in NO_CONTAINER_COMMANDS:
        return
    from sandboxes.orphans import cleanup_orphans  # a killed earlier run may have left containers

    cleanup_orphans()


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print a one-line error for the user and return the Exit to raise."""
    typer.echo(f"rocport: error: {message}", err=True)
    return typer.Exit(code)


def run(application: typer.Typer) -> None:
    """Run the CLI; a usage mistake (unknown option or command, bad or missing argument) is one line too."""
    import sys

    try:  # typer vendors click (typer._click) since 0.2x; older ones use click itself
        from typer._click import exceptions as cx
    except ImportError:
        from click import exceptions as cx  # type: ignore[no-redef]  # the same module, older home

    from agent.cli.conventions import apply

    command = apply(typer.main.get_command(application))
    try:
        code = command.main(prog_name="rocport", standalone_mode=False)
    except cx.NoArgsIsHelpError as exc:  # `rocport` or `rocport sweep` alone: the help, as before
        exc.show()
        sys.exit(exc.exit_code)
    except cx.UsageError as exc:
        where = exc.ctx.command_path if exc.ctx else "rocport"
        typer.echo(f"rocport: error: {exc.format_message().rstrip('.')}; see `{where} --help`", err=True)
        sys.exit(exc.exit_code)
    except cx.ClickException as exc:  # e.g. a file argument that cannot be opened
        typer.echo(f"rocport: error: {exc.format_message()}", err=True)
        sys.exit(exc.exit_code)
    except typer.Abort:  # Ctrl-C or end of input at a prompt
        typer.echo("rocport: aborted", err=True)
        sys.exit(130)
    sys.exit(code if isinstance(code, int) else 0)
