"""Output that survives pipes: consoles that never wrap a table in a CI log, and one way to print a
listing as a table, JSON or plain tab-separated lines (`--format table|json|plain`)."""

from __future__ import annotations

import json
import os
import re
import sys
from enum import StrEnum
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

# Piped output has no screen to fit: a width this large never wraps a table row or cuts an id or a
# path. A user who wants narrower output says so with COLUMNS.
PIPE_WIDTH = 4000


class Format(StrEnum):
    """How a listing is printed."""

    table = "table"
    json = "json"
    plain = "plain"


FORMAT_OPTION = typer.Option(
    Format.table,
    "--format",
    "-f",
    case_sensitive=False,
    help="table (for people), json (for programs) or plain (tab-separated, for grep/awk).",
)


def console(stderr: bool = False) -> Console:
    """A console for a command's output: the terminal's width on a terminal; on a pipe COLUMNS when set,
    otherwise wide enough that nothing wraps."""
    stream = sys.stderr if stderr else sys.stdout
    if stream.isatty():
        return Console(stderr=stderr)
    columns = os.environ.get("COLUMNS", "")
    width = int(columns) if columns.isdigit() and int(columns) > 0 else PIPE_WIDTH
    return Console(stderr=stderr, width=width, soft_wrap=False)


def key(column: str) -> str:
    """A column title as a JSON key: 'output tok/s' -> 'output_tok_s'."""
    return re.sub(r"[^a-z0-9]+", "_", column.lower()).strip("_")


def print_listing(
    columns: list[str],
    rows: list[list[Any]],
    fmt: Format | str = Format.table,
    *,
    title: str | None = None,
    out: Console | None = None,
    records: list[dict] | None = None,
) -> None:
    """Print rows as a rich table (ids and paths never cut), JSON (`records` when given, else one object
    per row keyed by column), or plain lines of tab-separated fields under a header line."""
    fmt = Format(fmt)
    if fmt is Format.json:
        data = (
            records
            if records is not None
            else [{key(c): v for c, v in zip(columns, row, strict=True)} for row in rows]
        )
        typer.echo(json.dumps(data, indent=2, default=str))
        return
    if fmt is Format.plain:
        typer.echo("\t".join(columns))
        for row in rows:
            typer.echo("\t".join(_plain(v) for v in row))
        return
    table = Table(title=title)
    for col in columns:
        table.add_column(col, overflow="fold")
    for row in rows:
        table.add_row(*(escape(_plain(v)) for v in row))
    (out or console()).print(table)


def _plain(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value).replace("\t", " ").replace("\n", " ")
