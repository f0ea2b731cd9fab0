"""`rocport scan PATH`: static ROCm-portability findings as a table, JSON or SARIF."""
from __future__ import annotations

import io
import json
from dataclasses import fields
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from agent.cli.app import app, fail, rocport_version
from tools.records import Failure
from tools.scan import ScanError, ScanReport, scan_report, to_sarif


class OutputFormat(str, Enum):
    table = "table"
    json = "json"
    sarif = "sarif"


def _table(report: ScanReport) -> Table:
    table = Table(title=f"rocport scan: {len(report.findings)} finding(s) in {report.files_scanned} file(s)")
    for column in ("kind", "where", "construct", "fix family"):
        table.add_column(column, overflow="fold")
    for f in report.findings:
        count = f.facts.get("occurrences")
        construct = f"{f.symbol} (x{count})" if count and count > 1 else f.symbol or ""
        table.add_row(f.kind, f"{f.file}:{f.line}", construct, f.facts.get("fix_family", ""))
    return table


_PRETTY_LIMIT = 2000
"""Past this many findings JSON is written one finding per line: the indenting encoder is pure
Python and would take longer than the scan itself."""


def _finding_dict(f: Failure) -> dict:
    return {k.name: getattr(f, k.name) for k in fields(f)}


def _render(report: ScanReport, fmt: OutputFormat) -> str:
    if fmt is OutputFormat.sarif:
        sarif = to_sarif(report.findings, version=rocport_version())
        return json.dumps(sarif, indent=2 if len(report.findings) <= _PRETTY_LIMIT else None)
    items = [_finding_dict(f) for f in report.findings]
    if len(items) <= _PRETTY_LIMIT:
        return json.dumps(items, indent=2)
    return "[\n" + ",\n".join(json.dumps(item) for item in items) + "\n]"


def _write(path: Path, text: str) -> None:
    try:
        path.write_text(text + "\n", encoding="utf-8")
    except OSError as exc:
        raise fail(f"cannot write {path}: {exc.strerror or exc}") from exc


def _summary(report: ScanReport, console: Console) -> None:
    for rel, reason in report.skipped:
        console.print(f"[yellow]skipped[/] {rel}: {reason}", highlight=False)


@app.command()
def scan(
    path: Annotated[Path, typer.Argument(help="Repo checkout (or one source file) to scan.")],
    profile: Annotated[str | None, typer.Option(
        "--profile", "-p", help="Framework profile name (sglang, vllm, tinyserve) or YAML path; "
                                "a hipifying profile hides what hipify translates.")] = None,
    hipify: Annotated[bool | None, typer.Option(
        "--hipify/--no-hipify", help="Override: the build runs torch's hipify (default: from the profile).")] = None,
    fmt: Annotated[OutputFormat, typer.Option("--format", "-f", help="table, json or sarif.")] = OutputFormat.table,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write the report here, not stdout.")] = None,
    jobs: Annotated[int | None, typer.Option("--jobs", "-j", min=1, help="Worker processes (default: CPUs).")] = None,
    include_vendored: Annotated[bool, typer.Option(
        "--include-vendored", help="Also scan third_party/, 3rdparty/, vendor/ directories.")] = False,
) -> None:
    """Find CUDA-only constructs a ROCm build would compile, outside ROCm branches."""
    try:
        report = scan_report(path, profile=profile, hipify=hipify, jobs=jobs, include_vendored=include_vendored)
    except ScanError as exc:
        raise fail(str(exc)) from exc
    err = Console(stderr=True)
    if fmt is OutputFormat.table and output is None:
        Console().print(_table(report))
        _summary(report, err)
        return
    text = _render(report, fmt) if fmt is not OutputFormat.table else _plain_table(report)
    if output is None:
        typer.echo(text)
    else:
        _write(output, text)
        err.print(f"wrote {len(report.findings)} finding(s) to {output}", highlight=False)
    _summary(report, err)


def _plain_table(report: ScanReport) -> str:
    console = Console(record=True, width=160, file=io.StringIO())
    console.print(_table(report))
    return console.export_text()
