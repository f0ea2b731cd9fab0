"""`rocport eval` (the task suite, scored) and `rocport demo` (the flagship task end to end)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import typer
from rich.table import Table

from agent.cli.app import app, fail
from agent.cli.output import console as output_console

FLAGSHIP = "glm52_mi355x"


def _workroot(workdir: Path | None, what: str) -> Path:
    from agent.loop.rundir import rocport_home

    root = workdir or rocport_home() / what / time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    root.mkdir(parents=True, exist_ok=True)
    return root


def _tasks(names: list[str]):
    from evals.taskdefs import TaskError, load_task, task_names

    try:
        return [load_task(n) for n in (names or task_names())]
    except TaskError as exc:
        raise fail(str(exc)) from exc


def _table(runs, title: str) -> Table:
    table = Table(title=title)
    for col in (
        "task",
        "strategy",
        "resolved",
        "builds",
        "unit compiles",
        "launches",
        "LLM tokens",
        "wall s",
        "reason",
    ):
        table.add_column(col, overflow="fold")
    for r in sorted(runs, key=lambda r: (r.task, r.strategy)):
        table.add_row(
            r.task,
            r.strategy,
            "[green]yes[/green]" if r.resolved else "[red]no[/red]",
            str(r.builds),
            str(r.unit_compiles),
            str(r.launches),
            str(r.llm_tokens),
            f"{r.wall_s:.0f}",
            "" if r.resolved else r.reason,
        )
    return table


@app.command("eval")
def eval_(
    tasks: list[str] = typer.Argument(None, help="Task names (default: all of evals/tasks)."),
    strategy: list[str] = typer.Option(
        ["rules"], "--strategy", "-s", help="rules, llm, rules+llm or naive; repeat to compare side by side."
    ),
    jobs: int = typer.Option(1, min=1, help="Tasks run in parallel."),
    output: Path = typer.Option(None, help="Write the results as JSON here (default: in the work dir)."),
    workdir: Path = typer.Option(None, help="Where task repos and checkpoints go."),
) -> None:
    """Run eval tasks through `rocport port` in real ROCm containers and score them."""
    from evals.runner import STRATEGIES, run_eval, totals
    from evals.scoring import baselines

    bad = [s for s in strategy if s not in STRATEGIES]
    if bad:
        raise fail(f"unknown strategy {bad[0]!r}: use one of {', '.join(STRATEGIES)}")
    chosen = _tasks(tasks or [])
    if output and not output.resolve().parent.is_dir():  # checked first: the eval takes long
        raise fail(f"--output {output}: directory {output.resolve().parent} does not exist; create it first")
    root = _workroot(workdir, "evals")
    typer.echo(f"{len(chosen)} task(s) x {len(strategy)} strategy(ies), {jobs} at a time; work dir {root}")
    from agent.loop.progress import RichProgress

    total, done, lock = len(chosen) * len(strategy), [0], threading.Lock()
    progress = RichProgress(output_console(stderr=True), title="eval", events=False, counters=False)

    def show(run) -> None:
        with lock:
            done[0] += 1
            progress.console.print(
                f"[{done[0]}/{total}] {'resolved' if run.resolved else 'NOT resolved':12s} "
                f"{run.task} ({run.strategy}): builds {run.builds}, launches {run.launches}, "
                f"{run.wall_s:.0f}s",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )
            progress({"event": "phase", "phase": f"{done[0]}/{total} ports"})

    # strategies side by side: each task's starting tree is built with CUDA once, and every strategy's
    # scoring build starts from it (evals/scoring.py); one strategy alone gains nothing from that
    baseline = baselines(root) if len(strategy) > 1 else None
    with progress:
        first = " (the starting trees' CUDA builds first)" if baseline else ""
        progress({"event": "phase", "phase": f"0/{total} ports{first}"})
        runs = run_eval(chosen, list(strategy), root, jobs=jobs, on_result=show, baseline=baseline)
    console = output_console()
    if baseline is not None:
        console.print(
            f"CUDA builds of the {len(baseline.seconds)} starting tree(s), shared by the strategies and "
            f"in none of their wall times: {sum(baseline.seconds.values()):.0f}s"
        )
    console.print(_table(runs, "rocport eval"))
    summary = totals(runs)
    tot = Table(title="totals")
    for col in ("strategy", "resolved", "builds", "unit compiles", "launches", "LLM tokens", "wall s"):
        tot.add_column(col)
    for name, t in summary.items():
        tot.add_row(
            name,
            f"{t['resolved']}/{t['tasks']}",
            str(t["builds"]),
            str(t["unit_compiles"]),
            str(t["launches"]),
            str(t["llm_tokens"]),
            f"{t['wall_s']:.0f}",
        )
    console.print(tot)
    out = output or root / "eval.json"
    out.write_text(json.dumps({"runs": [r.to_dict() for r in runs], "totals": summary}, indent=2))
    typer.echo(f"results: {out}")


@app.command()
def demo(
    workdir: Path = typer.Option(None, help="Where the task repo and checkpoint go."),
    task: str = typer.Option(
        FLAGSHIP, help="The eval task to port (default: the GLM-5.2-on-MI355X flagship)."
    ),
) -> None:
    """Port the flagship task (GLM-5.2 on MI355X, reproduced on the fixture framework) end to end in the
    ROCm build container: patch branch, PR series, report and benchmark table."""
    from agent.loop.rundir import RunDir
    from evals.runner import run_task
    from tools.pr import PRError, build_pr
    from tools.report import PERCENTILES, RunView, bench_rows

    [chosen] = _tasks([task])
    root = _workroot(workdir, "demo")
    console = output_console()
    console.print(f"[bold]rocport demo[/bold]: {chosen.name} — {chosen.description}", highlight=False)
    from agent.loop.observer import RichProgress
    from agent.loop.port import PortError

    progress = RichProgress(output_console(stderr=True), title="demo")
    try:
        with progress:
            run = run_task(chosen, "rules", root, sinks=[progress])
    except PortError as exc:  # a missing image or daemon: the run is kept, resumable with `rocport port`
        raise fail(str(exc)) from exc
    console.print(_table([run], "result"))
    view = RunView.load(RunDir(run.run_id).path)
    state = view.state
    console.print(
        f"work branch [bold]{state.get('branch')}[/bold] in {state.get('repo_dir')}", highlight=False
    )
    for o in state.get("outcomes", []):
        if o.get("kept"):
            console.print(
                f"  kept {o['proposal']['proposer']}: {', '.join(o['proposal']['files'])} "
                f"({str(o.get('commit'))[:10]})",
                highlight=False,
            )
    try:
        pr = build_pr(view)
        folder = pr.description.parent if pr.description else "the run's pr/ folder"
        console.print(f"PR branch {pr.branch}: {len(pr.patches)} patch(es) in {folder}", highlight=False)
    except PRError as exc:
        console.print(f"no PR: {exc}", highlight=False)
    console.print(f"report: {view.path / 'report.md'} and {view.path / 'report.html'}", highlight=False)
    if state.get("bench"):
        rows, thr = bench_rows(state["bench"])
        bench = Table(title="benchmark (measured window)")
        for col in ("metric (ms)", *PERCENTILES):
            bench.add_column(col)
        for r in rows:
            bench.add_row(*r)
        console.print(bench)
        for label, value in thr:
            console.print(f"  {label}: {value:.2f}", highlight=False)
    console.print(
        f"builds {run.builds}, unit compiles {run.unit_compiles}, server launches {run.launches}, "
        f"LLM tokens {run.llm_tokens}, wall {run.wall_s:.0f}s",
        highlight=False,
    )
    if not run.resolved:
        raise fail(f"the demo did not resolve: {run.reason}", code=1)
