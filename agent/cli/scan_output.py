"""What `rocport scan` prints: tables, JSON, SARIF and notes. No typer here (a plain scan starts
without it, see scan_argv.py); rich is imported only for what it draws: the tables, and notes on a
terminal's stderr. A scan that writes JSON or SARIF with stderr not a terminal (CI, scripts, a bench)
prints its notes as plain lines, one per note. The table is for a terminal: piped, or written with
--output, the same report is one line per finding (`file:line: kind construct [fix family]`, as a
compiler prints its diagnostics), so a path is never folded across lines and `grep` finds it whole."""

from __future__ import annotations

import sys
from collections import Counter

from tools.records import Failure
from tools.scan.report import ScanReport

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (tools/__init__.py)
if TYPE_CHECKING:
    from os import PathLike

    from rich.table import Table


class ScanUsageError(Exception):
    """A scan that cannot go on; the message is the one line `rocport: error: ...` shows (exit 2)."""


def echo(text: str, err: bool = False) -> None:
    """`text` and a newline, as typer.echo prints it. Plain ASCII without escape codes is written as
    is (what click does with it); anything else goes through typer.echo, which strips ANSI codes off a
    pipe and re-encodes a misconfigured stream."""
    stream = sys.stderr if err else sys.stdout
    if stream is None:
        return
    if not text.isascii() or "\x1b" in text:
        import typer

        typer.echo(text, err=err)
        return
    stream.write(text + "\n")
    stream.flush()


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
    return {name: getattr(f, name) for name in f.FIELDS}


def _render(report: ScanReport, fmt: str) -> str:
    import json  # here: the default (table) report needs none of it, ~2 ms of a scan's start

    if fmt == "sarif":
        from agent.version import rocport_version
        from tools.scan.sarif import to_sarif

        sarif = to_sarif(report.findings, version=rocport_version())
        return json.dumps(sarif, indent=2 if len(report.findings) <= _PRETTY_LIMIT else None)
    items = [_finding_dict(f) for f in report.findings]
    if len(items) <= _PRETTY_LIMIT:
        return json.dumps(items, indent=2)
    return "[\n" + ",\n".join(json.dumps(item) for item in items) + "\n]"


def _write(path: str | PathLike[str], text: str) -> None:
    try:
        with open(path, "w", encoding="utf-8") as out:
            out.write(text + "\n")
    except OSError as exc:
        raise ScanUsageError(f"cannot write {path}: {exc.strerror or exc}") from exc


def _note(text: str, head: str = "") -> None:
    """One note on stderr, `head` first (yellow on a terminal): through rich on a terminal (colour,
    wrapped to its width), else one plain line."""
    if not sys.stderr.isatty():
        echo(f"{head} {text}" if head else text, err=True)
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


def _counts(report: ScanReport) -> list[tuple[tuple[str, str], int]]:
    """(kind, fix family) and how many findings have them, most first."""
    return Counter((f.kind, f.facts.get("fix_family", "")) for f in report.findings).most_common()


def _statistics_lines(report: ScanReport) -> str:
    """`--statistics` off a terminal: a title, then `count kind [fix family]` per line (ruff's form)."""
    out = [f"rocport scan: {len(report.findings)} finding(s) by kind"]
    out += [f"{n:5d}  {kind}" + (f"  [{family}]" if family else "") for (kind, family), n in _counts(report)]
    return "\n".join(out)


def _statistics(report: ScanReport) -> Table:
    """Counts per kind and fix family, like `ruff --statistics`."""
    from rich.table import Table

    table = Table(title=f"rocport scan: {len(report.findings)} finding(s) by kind")
    for column in ("count", "kind", "fix family"):
        table.add_column(column)
    for (kind, family), n in _counts(report):
        table.add_row(str(n), kind, family)
    return table


def emit(report: ScanReport, fmt: str, output: str | PathLike[str] | None, statistics: bool) -> None:
    """Print (or write to `output`) the report in `fmt` (table, json or sarif), then the notes."""
    terminal = sys.stdout is not None and sys.stdout.isatty()  # rich's tables there, whole lines elsewhere
    if statistics:
        if terminal:
            from rich.console import Console

            Console().print(_statistics(report))
        else:  # piped: whole lines, as the findings are (_lines), and rich is not imported
            echo(_statistics_lines(report))
        _summary(report)
        return
    if fmt == "table" and output is None and terminal:
        from rich.console import Console

        Console().print(_table(report))
        if report.not_built:
            Console().print(_not_built_table(report))
        _summary(report)
        return
    text = _render(report, fmt) if fmt != "table" else _lines(report)
    if output is None:
        echo(text)
    else:
        _write(output, text)
        _note(f"wrote {len(report.findings)} finding(s) to {output}")
    _summary(report)


def _lines(report: ScanReport) -> str:
    """The table's report off a terminal: a title, one line per finding, then one per file the ROCm
    build leaves out."""
    out = [f"rocport scan: {len(report.findings)} finding(s) in {report.files_scanned} file(s)"]
    for f in report.findings:
        count = f.facts.get("occurrences")
        construct = f"{f.symbol} (x{count})" if count and count > 1 else f.symbol or ""
        family = f.facts.get("fix_family", "")
        out.append(f"{f.file}:{f.line}: {f.kind} {construct}".rstrip() + (f" [{family}]" if family else ""))
    if report.not_built:
        out.append(f"not in the ROCm build: {len(report.not_built)} file(s) with findings")
    for entry in report.not_built:
        counts = ", ".join(f"{n} {k}" for k, n in sorted(entry.kinds.items()))
        needs = (
            f"needs a port of {', '.join(entry.blockers)}" if entry.blockers else "renames and guards only"
        )
        out.append(f"{entry.path}: {counts}; {needs}")
    return "\n".join(out)
