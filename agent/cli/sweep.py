"""`rocport sweep plan|run|report`: nightly compatibility matrices."""
from __future__ import annotations

import datetime as dt
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from agent.cli.app import app, fail

sweep_app = typer.Typer(help="Nightly compatibility sweeps: plan, run and report a matrix.", no_args_is_help=True)
app.add_typer(sweep_app, name="sweep")


def _spec(file: Path):
    from agent.sweep.spec import SweepSpec
    from agent.yamlconf import ConfigError, load_yaml_model

    try:
        return load_yaml_model(file, SweepSpec)
    except ConfigError as exc:
        raise fail(str(exc)) from exc


def _store(db: Path):
    """The results database, or a one-line error when the file is not one."""
    import sqlite3

    from agent.sweep.results import ResultStore

    try:
        return ResultStore(db)
    except sqlite3.DatabaseError as exc:
        raise fail(f"{db} is not a readable sweep results database ({exc}): pass another --db, "
                   f"or move it aside to start a new one") from exc


def _default_db(spec_name: str) -> Path:
    from agent.rundir import rocport_home

    return rocport_home() / "sweeps" / f"{spec_name}.sqlite"


@sweep_app.command("plan")
def plan(file: Path = typer.Argument(..., help="Sweep YAML.")) -> None:
    """Print the cells a sweep expands into, with their build groups."""
    from agent.sweep.cells import expand

    spec = _spec(file)
    try:
        cells = expand(spec)
    except ValueError as exc:
        raise fail(str(exc)) from exc
    table = Table(title=f"{spec.name}: {len(cells)} cells")
    for col in ("cell", "ref", "image", "arch", "mode", "build group"):
        table.add_column(col)
    for c in cells:
        table.add_row(c.key, c.git_ref, c.target.image, c.target.arch, c.options.mode, c.build_key)
    Console().print(table)


@sweep_app.command("run")
def run(
    file: Path = typer.Argument(..., help="Sweep YAML."),
    db: Path = typer.Option(None, help="Results database (default: $ROCPORT_HOME/sweeps/<name>.sqlite)."),
    night: str = typer.Option(None, help="Night label (default: today's UTC date). Reuse it to resume."),
    jobs: int = typer.Option(1, min=1, help="Build groups run in parallel on this machine."),
    ray: str = typer.Option(None, help="Address of an existing Ray cluster; each build group becomes a task."),
    workdir: Path = typer.Option(None, help="Where clones and builds go (default: beside the database)."),
) -> None:
    """Run every cell not yet recorded for the night; one failing cell never stops the sweep."""
    from agent.sweep.cell_runner import run_cell
    from agent.sweep.cells import expand
    from agent.sweep.executor import run_sweep

    spec = _spec(file)
    night = night or dt.datetime.now(dt.UTC).strftime("%Y-%m-%d")
    db = db or _default_db(spec.name)
    store = _store(db)
    cells = expand(spec)
    done = sum(store.has(c.key, night) for c in cells)
    typer.echo(f"{spec.name} night {night}: {len(cells)} cells, {done} already recorded, db {db}")

    def show(result) -> None:
        stages = " ".join(s for s, ok in result.stages.items() if ok) or "none"
        typer.echo(f"  {result.status:7s} {result.cell_key}  stages: {stages}"
                   + (f"  ({result.reason})" if result.reason and result.status != "passed" else ""))

    try:
        run_sweep(cells, night=night, sweep=spec.name, store=store, workroot=workdir or db.parent / "work",
                  runner=run_cell, jobs=jobs, ray_address=ray, on_result=show)
    except RuntimeError as exc:
        raise fail(str(exc)) from exc


@sweep_app.command("report")
def report(
    file: Path = typer.Argument(..., help="Sweep YAML."),
    db: Path = typer.Option(None, help="Results database (default: $ROCPORT_HOME/sweeps/<name>.sqlite)."),
    markdown: Path = typer.Option(None, help="Write the markdown summary here."),
    html: Path = typer.Option(None, help="Write the static HTML dashboard here."),
) -> None:
    """Terminal table of the latest night, regressions and failure clusters; markdown and HTML on request."""
    from agent.sweep.analysis import clusters, histories, regressions
    from agent.sweep.report import dashboard_html
    from agent.sweep.report import markdown as to_markdown

    spec = _spec(file)
    db = db or _default_db(spec.name)
    if not db.is_file():
        raise fail(f"no results database {db}: run `rocport sweep run {file}` first")
    results = _store(db).results(spec.name)
    console = Console()
    grid = Table(title=f"{spec.name}: latest night per cell")
    for col in ("cell", "night", "status", "built", "loaded", "served", "bench", "output tok/s", "since"):
        grid.add_column(col)
    for h in histories(results):
        r = h.latest
        since = f"broken since {h.broken_since}" if h.broken_since else f"passing since {h.passing_since}"
        grid.add_row(h.cell_key, r.night, r.status, *("✔" if r.stages[s] else "✘" for s in r.stages),
                     f"{r.output_tok_s:.1f}" if r.output_tok_s else "—", since)
    console.print(grid)
    for g in regressions(results, spec.history_nights):
        console.print(f"[red]regression[/red] {g.cell_key} ({g.what}): {g.detail}", highlight=False)
    for c in clusters(results):
        console.print(f"cluster {c.signature}: {len(c.cells)} cell(s), first {c.first_seen}, "
                      f"last {c.last_seen}, streak {c.streak}", highlight=False)
    if markdown:
        markdown.write_text(to_markdown(results, spec.name, spec.history_nights))
        typer.echo(f"wrote {markdown}")
    if html:
        html.write_text(dashboard_html(results, spec.name, spec.history_nights))
        typer.echo(f"wrote {html}")
