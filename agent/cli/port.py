"""`rocport port` (run the port loop) and `rocport runs` (list runs with their status)."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console

from agent.cli.app import app, fail
from agent.cli.output import FORMAT_OPTION, Format, print_listing
from agent.cli.output import console as output_console
from agent.config import JobError, PortJob, load_job
from agent.profiles import ProfileError
from sandboxes.base import SandboxError

if TYPE_CHECKING:
    from agent.loop.observer import Sink

# agent.loop.port, agent.loop.store and agent.loop.observer pull in LangGraph (about a second of start-up): they are
# imported inside the commands, so every other `rocport` command starts fast.


def _ask_review(console: Console, pending: list[dict]) -> dict[int, bool]:
    from rich.syntax import Syntax  # here: it loads pygments (~10 ms), which only a review needs

    decisions: dict[int, bool] = {}
    for item in pending:
        console.print(
            f"\n[bold]LLM patch[/bold] ({item['proposer']}) for {item['kind']}: {item['rationale']}"
        )
        console.print(Syntax(item["diff"], "diff", theme="ansi_dark"))
        decisions[item["index"]] = typer.confirm("Apply this patch?", default=False)
    return decisions


def _summary(result, console: Console) -> None:
    c = result.counters
    console.print(f"[bold]{result.status}[/bold]: {result.reason}")
    if c:
        console.print(
            f"builds {c.get('builds', 0)}, unit compiles {c.get('unit_compiles', 0)}, "
            f"load checks {c.get('load_checks', 0)}, server launches {c.get('launches', 0)}, "
            f"LLM tokens {c.get('tokens_in', 0) + c.get('tokens_out', 0)}"
        )
    if result.report_path:
        console.print(f"report: {result.report_path}")
    console.print(f"run id: {result.run_id}")


def _check_checkpoint(job: PortJob) -> None:
    """Read the checkpoint's safetensors headers before any build: a corrupt shard or index is the user's
    to fix (re-download), and finding it here costs milliseconds instead of a build and a load check."""
    from tools.weights.checkpoint import CheckpointError, load_checkpoint

    path = Path(job.model.path) if job.model.path else None
    if path is None:
        return
    if not path.exists():
        raise fail(
            f"model.path {path} does not exist: point it at the checkpoint directory (config.json + "
            f"safetensors), or drop model.path to build only"
        )
    if (
        path.is_dir()
        and not any(path.glob("*.safetensors"))
        and not any(path.glob("*.safetensors.index.json"))
    ):
        return  # another format (e.g. .bin): the framework's own load check judges it
    try:
        load_checkpoint(path)
    except CheckpointError as exc:
        raise fail(f"model.path: {exc}") from exc


def _stage_table(run_id: str, console: Console) -> None:
    """What ran, what was skipped and why; the image preflight's checks when it found something missing."""
    from agent.loop.rundir import RunDir
    from tools.report import UNIT_HEADER, ReportError, RunView, stage_rows, unit_rows

    try:
        view = RunView.load(RunDir(run_id).path)
    except ReportError:
        return
    print_listing(["stage", "ran", "why / result"], stage_rows(view.state, view.events), out=console)
    if unit_rows(view.state):
        print_listing(
            UNIT_HEADER,
            unit_rows(view.state),
            title=f"unit compiles: {view.state['stages']['unit'].get('detail', '')}",
            out=console,
        )
    pre = view.state.get("stages", {}).get("preflight", {})
    if pre.get("checks") and not pre.get("ready", True):
        print_listing(
            ["image needs", "ok", "found", "for"],
            [[c["need"], "yes" if c["ok"] else "NO", c["found"], c["why"]] for c in pre["checks"]],
            title=f"preflight of {pre.get('image', '')}",
            out=console,
        )


UNTIL_HELP = (
    "Stop after this stage: scan, unit (the image preflight, then hipcc on every unit the ROCm build "
    "compiles), build, load, serve or bench "
    "(everything; the default)."
)


def _run_errors() -> tuple[type[Exception], ...]:
    """The errors a run itself ends with (a one-line `rocport: error:`), imported when one is raised."""
    from agent.loop.nodes.checkout import CheckoutError
    from agent.loop.port import PortError
    from agent.loop.store import StoreError

    return (PortError, CheckoutError, StoreError)


def _check_machine(job: PortJob) -> None:
    """The target against the build image's labels, a fixed server port against what already listens."""
    from agent.loop.nodes.env import job_image
    from agent.loop.preflight_checks import job_problems
    from agent.profiles import load_profile

    problems = job_problems(job, job_image(job, load_profile(job.framework.profile)))
    if problems:
        raise fail(problems[0])


@app.command()
def port(
    config: list[str] = typer.Option(
        [],
        "-c",
        "--config",
        metavar="JOB.yaml|KEY=VALUE",
        help="A job YAML file or a dotted key=value override; repeatable, applied left to right.",
    ),
    resume: str | None = typer.Option(
        None, "--resume", metavar="RUN_ID", help="Continue the run RUN_ID from its last checkpoint."
    ),
    until: str | None = typer.Option(None, "--until", metavar="STAGE", help=UNTIL_HELP),
    json_events: bool = typer.Option(False, "--json", help="Print the event stream as JSON lines on stdout."),
    review: bool = typer.Option(False, "--review", help="Pause before applying any LLM patch and ask."),
    approve: bool | None = typer.Option(
        None,
        "--approve/--reject",
        show_default=False,
        help="With --resume: answer a paused review for all pending patches.",
    ),
) -> None:
    """Port a framework to ROCm: preflight, build, diagnose, patch, rebuild, load, serve, benchmark, report."""
    from agent.loop.observer import JsonlSink, RichProgress

    console = output_console(stderr=True)
    if resume is None and not config:
        raise fail("nothing to port: pass -c job.yaml (and -c key=value overrides) or --resume RUN_ID")
    if resume is not None and config:
        raise fail("--resume continues a run with its own job.yaml; drop the -c options")
    if until is not None:
        from agent.loop.graph import STAGES

        if until not in STAGES:
            raise fail(f"--until {until}: use one of {', '.join(STAGES)}")
        if resume is not None:
            raise fail("--until applies to a new run; a resumed run keeps the job it started with")
        config = [*config, f"until={until}"]
    progress = None if json_events else RichProgress(console, title="port")
    sinks: list[Sink] = [JsonlSink()] if json_events else [progress] if progress else []
    answer: bool | dict[int, bool] | None = approve
    try:
        while True:
            if progress:
                progress.__enter__()
            try:
                # the loop (LangGraph, ~1 s of CPU to import) only once the job is known to be good:
                # a mistyped path or key is answered in a third of the time
                if resume is None:
                    job = load_job(config)
                    _check_checkpoint(job)
                    _check_machine(job)
                    from agent.loop.port import start_port

                    result = start_port(job, sinks=sinks, review=review)
                else:
                    from agent.loop.port import resume_port

                    result = resume_port(resume, sinks=sinks, review=review, answer=answer)
            finally:
                if progress:
                    progress.__exit__(None, None, None)
            if result.status != "paused" or json_events or not sys.stdin.isatty():
                break
            resume, answer = result.run_id, _ask_review(console, result.review or [])
    except (JobError, ProfileError) as exc:
        raise fail(str(exc)) from exc
    except SandboxError as exc:
        raise fail(
            f"{exc} (fix it, then continue with `rocport port --resume RUN_ID`; see `rocport runs`)"
        ) from exc
    except _run_errors() as exc:  # evaluated only for an exception the clauses above did not take
        raise fail(str(exc)) from exc
    if result.status == "paused":
        console.print(
            f"paused for review: {len(result.review or [])} LLM patch(es); continue with "
            f"`rocport port --resume {result.run_id} --approve` (or --reject)"
        )
        raise typer.Exit(3)
    if not json_events:
        _stage_table(result.run_id, console)
        _summary(result, console)
    raise typer.Exit(0 if result.status == "green" else 1)


def _status(row) -> str:
    """'running' only while a process drives the run; one whose process died says how to continue it."""
    from agent.loop.rundir import RunDir
    from agent.loop.runlock import is_driven

    if row.status != "running" or is_driven(RunDir(row.run_id).path):
        return row.status
    return "killed (--resume)"


@app.command()
def runs(
    limit: int = typer.Option(20, min=1, metavar="N", help="How many recent runs to list."),
    fmt: Format = FORMAT_OPTION,
) -> None:
    """List port runs (newest first) with their status, phase and costs."""
    from agent.loop.store import RunStore, StoreError

    try:
        rows = RunStore().list(limit)
    except StoreError as exc:
        raise fail(str(exc)) from exc
    if not rows and fmt is Format.table:
        typer.echo("no runs yet: start one with `rocport port -c job.yaml`")
        return
    print_listing(
        ["run id", "framework", "status", "phase", "builds", "launches", "updated", "reason"],
        [
            [
                r.run_id,
                r.framework,
                _status(r),
                r.phase or "",
                r.counters.get("builds", ""),
                r.counters.get("launches", ""),
                time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r.updated)),
                r.reason or "",
            ]
            for r in rows
        ],
        fmt,
    )
