"""`rocport scan PATH`: static ROCm-portability findings as a table, JSON or SARIF.

The options are declared once in scan_options.py; this typer command is built from them, and so is
the parser a `rocport scan` process tries before importing typer (scan_argv.py). Both run the scan
through scan_run.py and print through scan_output.py.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from agent.cli.app import app, fail
from agent.cli.scan_options import BY_DEST, FORMATS, PATH_HELP, ScanOption
from agent.cli.scan_output import ScanUsageError
from agent.cli.scan_run import scan_exit_status

OutputFormat = StrEnum("OutputFormat", [(name, name) for name in FORMATS])  # type: ignore[misc]
_DEFAULT_FORMAT = OutputFormat(BY_DEST["fmt"].default)


def _option(dest: str) -> typer.models.OptionInfo:
    spec: ScanOption = BY_DEST[dest]
    return typer.Option(*spec.declarations(), help=spec.help, min=spec.minimum)


@app.command()
def scan(
    path: Annotated[Path, typer.Argument(help=PATH_HELP)],
    profile: Annotated[str | None, _option("profile")] = BY_DEST["profile"].default,
    hipify: Annotated[bool | None, _option("hipify")] = BY_DEST["hipify"].default,
    fmt: Annotated[OutputFormat, _option("fmt")] = _DEFAULT_FORMAT,
    output: Annotated[Path | None, _option("output")] = BY_DEST["output"].default,
    jobs: Annotated[int | None, _option("jobs")] = BY_DEST["jobs"].default,
    include_vendored: Annotated[bool, _option("include_vendored")] = BY_DEST["include_vendored"].default,
    exclude: Annotated[list[str] | None, _option("exclude")] = BY_DEST["exclude"].default,
    select: Annotated[list[str] | None, _option("select")] = BY_DEST["select"].default,
    statistics: Annotated[bool, _option("statistics")] = BY_DEST["statistics"].default,
    cache: Annotated[bool, _option("cache")] = BY_DEST["cache"].default,
) -> None:
    """Find CUDA-only constructs a ROCm build would compile, outside ROCm branches. Exits 1 when
    findings remain (files the ROCm build compiles, when the profile names its source list)."""
    try:
        status = scan_exit_status(
            path,
            profile=profile,
            hipify=hipify,
            fmt=str(fmt),
            output=output,
            jobs=jobs,
            include_vendored=include_vendored,
            exclude=exclude,
            select=select,
            statistics=statistics,
            cache=cache,
        )
    except ScanUsageError as exc:
        raise fail(str(exc)) from exc
    if status:
        raise typer.Exit(status)
