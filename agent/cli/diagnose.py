"""`rocport diagnose LOG`: a build or server log -> the failures in it, as a table or JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from agent.cli.app import app, fail
from agent.cli.output import FORMAT_OPTION, Format, print_listing
from agent.cli.output import console as output_console
from tools.diagnose import DiagnoseError, diagnose_file
from tools.records import Failure


def _where(failure: Failure) -> str:
    if not failure.file:
        return "-"
    where = failure.file
    if failure.line:
        where += f":{failure.line}"
        if failure.column:
            where += f":{failure.column}"
    unit = failure.facts.get("unit")
    if unit and unit != failure.file:
        where += f"\n(in {unit})"
    return where


def _what(failure: Failure) -> str:
    what = failure.message.split("\n", 1)[0]
    if failure.symbol and failure.symbol not in what:
        what += f"  [{failure.symbol}]"
    counts = [f"{len(failure.facts[k])} {k}" for k in ("missing", "unexpected") if failure.facts.get(k)]
    if counts:
        what += f"  ({', '.join(counts)})"
    if failure.facts.get("shapes"):
        param, loaded = failure.facts["shapes"]
        what += f"  (param {param}, checkpoint {loaded})"
    return what


def _table(failures: list[Failure], log: Path) -> Table:
    table = Table(title=f"{len(failures)} failure(s) in {log}", title_justify="left", show_lines=False)
    table.add_column("kind", style="bold")
    table.add_column("where", overflow="fold")
    table.add_column("what", overflow="fold")
    table.add_column("source", style="dim")
    for failure in failures:
        table.add_row(failure.kind, _where(failure), _what(failure), failure.source)
    return table


@app.command()
def diagnose(
    log: Annotated[Path, typer.Argument(help="A build or server log file.")],
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the failures as a JSON list of Failure records.")
    ] = False,
    fmt: Format = FORMAT_OPTION,
    repo: Annotated[
        Path | None, typer.Option("--repo", help="The repo the log came from: paths become repo-relative.")
    ] = None,
    source: Annotated[
        str | None,
        typer.Option(
            "--source", help="What produced the log when it cannot be told (hipcc, nvcc, server, ...)."
        ),
    ] = None,
) -> None:
    """Find every failure in a build or server log and classify it (FAILURE_CLASSES.md kinds)."""
    if repo is not None and not repo.is_dir():
        raise fail(f"--repo {repo} is not a directory (pass the repository the log was produced from)")
    try:
        failures = diagnose_file(log, repo_root=repo, source=source)
    except DiagnoseError as exc:
        raise fail(str(exc)) from None
    if as_json or fmt is Format.json:
        typer.echo(json.dumps([f.to_dict() for f in failures], indent=2))
        return
    if fmt is Format.plain:
        print_listing(
            ["kind", "where", "what", "source"],
            [[f.kind, _where(f).replace("\n", " "), _what(f), f.source] for f in failures],
            fmt,
        )
        return
    console = output_console()
    if not failures:
        empty = log.stat().st_size == 0
        console.print(f"{log} is empty: nothing to diagnose." if empty else f"No failures found in {log}.")
        return
    console.print(_table(failures, log))
