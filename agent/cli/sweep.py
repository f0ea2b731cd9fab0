"""`rocport sweep plan|run|report`: nightly compatibility matrices."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import typer

from agent.cli.app import app, fail
from agent.cli.output import FORMAT_OPTION, Format, print_listing
from agent.cli.output import console as output_console

FAIL_ON_HELP = (
    "Exit 1 when the night has: error (a cell that did not pass: could not start, lost a stage or "
    "failed), regression (a stage lost or throughput below the recent median). Comma-separated."
)
FAIL_ON_KINDS = ("error", "regression")

sweep_app = typer.Typer(
    help="Nightly compatibility sweeps: plan, run and report a matrix.", no_args_is_help=True
)
app.add_typer(sweep_app, name="sweep")


def _spec(file: Path):
    from agent.sweep.spec import SweepSpec
    from agent.yamlconf import ConfigError, load_yaml_model

    try:
        return load_yaml_model(file, SweepSpec)
    except ConfigError as exc:
        raise fail(str(exc)) from exc


def _fail_on(value: str | None) -> set[str]:
    kinds = {k.strip() for k in (value or "").split(",") if k.strip()}
    bad = sorted(kinds - set(FAIL_ON_KINDS))
    if bad:
        raise fail(f"--fail-on {bad[0]}: use error, regression or both (error,regression)")
    return kinds


def _gate(kinds: set[str], results: list, night: str, history_nights: int) -> None:
    """Exit 1 (after everything was written) when the night has what --fail-on names."""
    from agent.sweep.analysis import regressions

    tonight = [r for r in results if r.night == night]
    problems = []
    if "error" in kinds:
        broken = [r for r in tonight if r.status != "passed"]
        if broken:
            problems.append(f"{len(broken)} cell(s) did not pass ({', '.join(r.cell_key for r in broken)})")
    if "regression" in kinds:
        regs = [g for g in regressions(results, history_nights) if g.night == night]
        if regs:
            problems.append(
                f"{len(regs)} regression(s) ({', '.join(f'{g.cell_key}: {g.what}' for g in regs)})"
            )
    if problems:
        typer.echo(
            f"rocport: night {night} fails --fail-on {','.join(sorted(kinds))}: {'; '.join(problems)}",
            err=True,
        )
        raise typer.Exit(1)


def _store(db: Path):
    """The results database, or a one-line error when the file is not one."""
    import sqlite3

    from agent.sweep.results import ResultStore

    try:
        return ResultStore(db)
    except sqlite3.DatabaseError as exc:
        raise fail(
            f"{db} is not a readable sweep results database ({exc}): pass another --db, "
            f"or move it aside to start a new one"
        ) from exc


def _default_db(spec_name: str) -> Path:
    from agent.loop.rundir import rocport_home

    return rocport_home() / "sweeps" / f"{spec_name}.sqlite"


@sweep_app.command("plan")
def plan(
    file: Path = typer.Argument(..., metavar="SWEEP.yaml", help="Sweep YAML."), fmt: Format = FORMAT_OPTION
) -> None:
    """Print the cells a sweep expands into, with their build groups."""
    from agent.sweep.cells import expand

    spec = _spec(file)
    try:
        cells = expand(spec)
    except ValueError as exc:
        raise fail(str(exc)) from exc
    print_listing(
        ["cell", "ref", "image", "arch", "mode", "build group"],
        [[c.key, c.git_ref, c.target.image, c.target.arch, c.options.mode, c.build_key] for c in cells],
        fmt,
        title=f"{spec.name}: {len(cells)} cells",
    )


@sweep_app.command("run")
def run(
    file: Path = typer.Argument(..., metavar="SWEEP.yaml", help="Sweep YAML."),
    db: Path = typer.Option(
        None, metavar="PATH", help="Results database (default: $ROCPORT_HOME/sweeps/<name>.sqlite)."
    ),
    night: str = typer.Option(
        None, metavar="YYYY-MM-DD", help="Night label (default: today's UTC date). Reuse it to resume."
    ),
    jobs: int = typer.Option(1, min=1, metavar="N", help="Build groups run in parallel on this machine."),
    ray: str = typer.Option(
        None, metavar="ADDRESS", help="Address of an existing Ray cluster; each build group becomes a task."
    ),
    workdir: Path = typer.Option(
        None, metavar="PATH", help="Where clones and builds go (default: beside the database)."
    ),
    fail_on: str = typer.Option(None, "--fail-on", metavar="error,regression", help=FAIL_ON_HELP),
) -> None:
    """Run every cell not yet recorded for the night; one failing cell never stops the sweep."""
    from agent.loop.observer import RichProgress
    from agent.sweep.cell_runner import run_cell
    from agent.sweep.cells import expand
    from agent.sweep.executor import run_sweep
    from agent.sweep.fixture import FixtureError, prepare

    kinds = _fail_on(fail_on)
    spec = _spec(file)
    night = night or dt.datetime.now(dt.UTC).strftime("%Y-%m-%d")
    db = db or _default_db(spec.name)
    store = _store(db)
    try:
        spec = prepare(spec)
    except FixtureError as exc:
        raise fail(str(exc)) from exc
    cells = expand(spec)
    done = sum(store.has(c.key, night) for c in cells)
    typer.echo(f"{spec.name} night {night}: {len(cells)} cells, {done} already recorded, db {db}")
    progress = RichProgress(
        output_console(stderr=True), title=f"sweep {spec.name}", events=False, counters=False
    )
    count = {"done": done}

    def show(result) -> None:
        count["done"] += 1
        stages = " ".join(s for s, ok in result.stages.items() if ok) or "none"
        progress.console.print(
            f"[{count['done']}/{len(cells)}] {result.status:7s} {result.cell_key}  stages: {stages}"
            + (f"  ({result.reason})" if result.reason and result.status != "passed" else ""),
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        progress({"event": "phase", "phase": f"{count['done']}/{len(cells)} cells"})

    try:
        with progress:
            progress({"event": "phase", "phase": f"{done}/{len(cells)} cells"})
            run_sweep(
                cells,
                night=night,
                sweep=spec.name,
                store=store,
                workroot=workdir or db.parent / "work",
                runner=run_cell,
                jobs=jobs,
                ray_address=ray,
                on_result=show,
            )
    except RuntimeError as exc:
        raise fail(str(exc)) from exc
    _gate(kinds, store.results(spec.name), night, spec.history_nights)


@sweep_app.command("report")
def report(
    file: Path = typer.Argument(..., metavar="SWEEP.yaml", help="Sweep YAML."),
    db: Path = typer.Option(
        None, metavar="PATH", help="Results database (default: $ROCPORT_HOME/sweeps/<name>.sqlite)."
    ),
    markdown: Path = typer.Option(None, metavar="PATH", help="Write the markdown summary here."),
    html: Path = typer.Option(None, metavar="PATH", help="Write the static HTML dashboard here."),
    fail_on: str = typer.Option(None, "--fail-on", metavar="error,regression", help=FAIL_ON_HELP),
    fmt: Format = FORMAT_OPTION,
) -> None:
    """Terminal table of the latest night, regressions and failure clusters; markdown and HTML on request."""
    from agent.sweep.analysis import clusters, histories, regressions

    kinds = _fail_on(fail_on)
    spec = _spec(file)
    db = db or _default_db(spec.name)
    if not db.is_file():
        raise fail(f"no results database {db}: run `rocport sweep run {file}` first")
    results = _store(db).results(spec.name)
    from agent.sweep.report import status_of

    console = output_console()
    rows = []
    regs = regressions(results, spec.history_nights)
    for h in histories(results):
        r = h.latest
        since = f"broken since {h.broken_since}" if h.broken_since else f"passing since {h.passing_since}"
        rows.append(
            [
                h.cell_key,
                r.night,
                status_of(r, regs),
                *("yes" if r.stages[s] else "no" for s in r.stages),
                f"{r.output_tok_s:.1f}" if r.output_tok_s else "",
                since,
                (r.provenance or {}).get("framework_commit", "")[:12],
            ]
        )
    print_listing(
        ["cell", "night", "status", "built", "loaded", "served", "bench", "output tok/s", "since", "commit"],
        rows,
        fmt,
        title=f"{spec.name}: latest night per cell",
        out=console,
    )
    if fmt is not Format.table:
        _write(markdown, html, results, spec)
        _gate(kinds, results, max(r.night for r in results) if results else "", spec.history_nights)
        return
    for g in regs:
        console.print(f"[red]regression[/red] {g.cell_key} ({g.what}): {g.detail}", highlight=False)
    for c in clusters(results):
        console.print(
            f"cluster {c.signature}: {len(c.cells)} cell(s), first {c.first_seen}, "
            f"last {c.last_seen}, streak {c.streak}",
            highlight=False,
        )
    _write(markdown, html, results, spec)
    _gate(kinds, results, max(r.night for r in results) if results else "", spec.history_nights)


def _write(markdown: Path | None, html: Path | None, results: list, spec) -> None:
    from agent.sweep.report import dashboard_html
    from agent.sweep.report import markdown as to_markdown

    if markdown:
        markdown.write_text(to_markdown(results, spec.name, spec.history_nights))
        typer.echo(f"wrote {markdown}", err=True)
    if html:
        html.write_text(dashboard_html(results, spec.name, spec.history_nights))
        typer.echo(f"wrote {html}", err=True)
