"""`rocport doctor`: what this machine offers, and what to do about what it lacks."""

from __future__ import annotations

import json
from dataclasses import asdict

import typer
from rich.console import Console
from rich.table import Table

from agent.cli.app import app
from tools.doctor import run_checks


@app.command()
def doctor(as_json: bool = typer.Option(False, "--json", help="Print the checks as JSON.")) -> None:
    """Report hipcc, nvcc, Docker, ROCm build images, GPUs and the LLM endpoint."""
    checks = run_checks()
    if as_json:
        typer.echo(json.dumps([asdict(c) for c in checks], indent=2))
        return
    table = Table(title="rocport doctor", show_lines=True)
    table.add_column("part", style="bold")
    table.add_column("", justify="center")
    table.add_column("found")
    table.add_column("what to do")
    for check in checks:
        mark = "[green]ok[/green]" if check.ok else "[yellow]missing[/yellow]"
        table.add_row(check.name, mark, check.detail, check.fix)
    Console(width=max(Console().width, 120)).print(table)
