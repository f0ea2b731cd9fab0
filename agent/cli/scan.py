"""`rocport scan PATH`: static ROCm-portability findings as a table, JSON or SARIF.

rich is imported only for what it draws: the tables, and notes on a terminal's stderr. A scan that
writes JSON or SARIF with stderr not a terminal (CI, scripts, a bench) prints its notes as plain
lines, one per note, and skips rich's import (~17 ms of a ~0.2 s process start).
"""

from __future__ import annotations

import io
import json
import sys
from collections import Counter
from dataclasses import fields
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from agent.cli.app import app, fail, rocport_version
from tools.records import Failure
from tools.scan import ScanError, ScanReport, scan_report, to_sarif
from tools.scan.cache import default_cache_dir

if TYPE_CHECKING:
    from rich.table import Table


class OutputFormat(StrEnum):
    table = "table"
    json = "json"
    sarif = "sarif"


def _table(report: ScanReport) -> Table:
    from rich.table import Table

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


def _note(text: str, head: str = "") -> None:
    """One note on stderr, `head` first (yellow on a terminal): through rich on a terminal (colour,
    wrapped to its width), else one plain line."""
    if not sys.stderr.isatty():
        typer.echo(f"{head} {text}" if head else text, err=True)
        return
    from rich.console import Console
    from rich.markup import escape

    Console(stderr=True).print(f"[yellow]{head}[/] {escape(text)}" if head else escape(text), highlight=False)


def _summary(report: ScanReport) -> None:
    for rel, reason in report.skipped:
        _note(f"{rel}: {reason}", head="skipped")
    if report.build:
        _note(
            f"ROCm build ({report.build}): {len(report.findings)} finding(s) in files it compiles; "
            f"{len(report.not_built)} file(s) with findings are not in it; "
            f"{report.rocm_only} ROCm-only file(s)"
        )


_BLOCKERS_SHOWN = 4


def _not_built_table(report: ScanReport) -> Table:
    """One row per file the ROCm build leaves out: what adding it would take."""
    from rich.table import Table

    table = Table(title=f"not in the ROCm build: {len(report.not_built)} file(s) with findings")
    for column in ("file", "findings", "needs a port of"):
        table.add_column(column, overflow="fold")
    for entry in report.not_built:
        counts = ", ".join(f"{n} {k}" for k, n in sorted(entry.kinds.items()))
        blockers = entry.blockers[:_BLOCKERS_SHOWN] + (
            ["..."] if len(entry.blockers) > _BLOCKERS_SHOWN else []
        )
        table.add_row(entry.path, counts, ", ".join(blockers) or "(renames and guards only)")
    return table


def _statistics(report: ScanReport) -> Table:
    """Counts per kind and fix family, like `ruff --statistics`."""
    from rich.table import Table

    counts = Counter((f.kind, f.facts.get("fix_family", "")) for f in report.findings)
    table = Table(title=f"rocport scan: {len(report.findings)} finding(s) by kind")
    for column in ("count", "kind", "fix family"):
        table.add_column(column)
    for (kind, family), n in counts.most_common():
        table.add_row(str(n), kind, family)
    return table


@app.command()
def scan(
    path: Annotated[Path, typer.Argument(help="Repo checkout (or one source file) to scan.")],
    profile: Annotated[
        str | None,
        typer.Option(
            "--profile",
            "-p",
            help="Framework profile name (sglang, vllm, tinyserve) or YAML path; "
            "a hipifying profile hides what hipify translates.",
        ),
    ] = None,
    hipify: Annotated[
        bool | None,
        typer.Option(
            "--hipify/--no-hipify",
            help="Override: the build runs torch's hipify (default: from the profile).",
        ),
    ] = None,
    fmt: Annotated[
        OutputFormat, typer.Option("--format", "-f", help="table, json or sarif.")
    ] = OutputFormat.table,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the report here, not stdout.")
    ] = None,
    jobs: Annotated[
        int | None, typer.Option("--jobs", "-j", min=1, help="Worker processes (default: CPUs).")
    ] = None,
    include_vendored: Annotated[
        bool,
        typer.Option("--include-vendored", help="Also scan third_party/, 3rdparty/, vendor/ directories."),
    ] = False,
    exclude: Annotated[
        list[str] | None,
        typer.Option(
            "--exclude",
            help="Leave out files or directories matching this glob (repeatable); replaces the "
            "profile's default (tests, benchmarks, docs, examples).",
        ),
    ] = None,
    select: Annotated[
        list[str] | None,
        typer.Option(
            "--select", help="Report only this kind (repeatable): cuda_header, warp_size, inline_ptx, ..."
        ),
    ] = None,
    statistics: Annotated[
        bool,
        typer.Option("--statistics", help="Print counts per kind and fix family instead of every finding."),
    ] = False,
    cache: Annotated[
        bool,
        typer.Option(
            "--cache/--no-cache",
            help="Reuse results of files unchanged since the last scan (kept under "
            "$ROCPORT_CACHE_DIR/scan, default ~/.cache/rocport/scan).",
        ),
    ] = True,
) -> None:
    """Find CUDA-only constructs a ROCm build would compile, outside ROCm branches. Exits 1 when
    findings remain (files the ROCm build compiles, when the profile names its source list)."""
    try:
        report = scan_report(
            path,
            profile=_profile(profile),
            hipify=hipify,
            jobs=jobs,
            include_vendored=include_vendored,
            exclude=tuple(exclude) if exclude is not None else None,
            select=tuple(select or ()),
            cache_dir=default_cache_dir() if cache else None,
        )
    except ScanError as exc:
        raise fail(str(exc)) from exc
    _emit(report, fmt, output, statistics)
    if report.findings:
        raise typer.Exit(1)


def _profile(name_or_path: str | None):
    """The framework profile a scan reads, loaded here: the scan itself takes it as data."""
    if name_or_path is None:
        return None
    from agent.profiles import ProfileError, load_profile

    try:
        return load_profile(name_or_path)
    except ProfileError as exc:
        raise fail(str(exc)) from exc


def _emit(report: ScanReport, fmt: OutputFormat, output: Path | None, statistics: bool) -> None:
    if statistics:
        from rich.console import Console

        Console().print(_statistics(report))
        _summary(report)
        return
    if fmt is OutputFormat.table and output is None:
        from rich.console import Console

        Console().print(_table(report))
        if report.not_built:
            Console().print(_not_built_table(report))
        _summary(report)
        return
    text = _render(report, fmt) if fmt is not OutputFormat.table else _plain_table(report)
    if output is None:
        typer.echo(text)
    else:
        _write(output, text)
        _note(f"wrote {len(report.findings)} finding(s) to {output}")
    _summary(report)


def _plain_table(report: ScanReport) -> str:
    from rich.console import Console

    console = Console(record=True, width=160, file=io.StringIO())
    console.print(_table(report))
    return console.export_text()
