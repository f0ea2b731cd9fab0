"""`rocport tune RUN_ID`: search the serving configuration of a green port (agent/tune)."""

from __future__ import annotations

import json

import typer

from agent.cli.app import app, fail
from agent.loop.rundir import RunDir
from agent.tune.run import TuneError, load_run, tune_run
from tools.tune.records import Trial
from tools.tune.render import chosen_lines, comparison_lines, trial_table
from tools.tune.results import OUTCOME_FILE, ReferenceError, load_outcome


def _print_trial(strategy: str, t: Trial) -> None:
    numbers = (
        f"{t.output_tok_s:,.0f} out tok/s, TTFT {t.ttft_ms:.0f} ms, TPOT {t.tpot_ms:.1f} ms"
        if t.measured
        else t.reason
    )
    typer.echo(f"[{strategy}] {t.key}: {t.status} ({t.wall_s:.0f}s) {numbers}")


@app.command("tune")
def tune(
    run_id: str = typer.Argument(..., help="A green run (`rocport runs`)."),
    gpus: int = typer.Option(None, "--gpus", help="GPUs per node (default: the profile's tune.gpus)."),
    scale: float = typer.Option(
        None, "--scale", help="Scale the job's ISL/OSL, e.g. 0.016 for glm52-mi355x on the fixture."
    ),
    num_prompts: int = typer.Option(None, "--num-prompts", help="Measured requests per candidate."),
    max_concurrency: int = typer.Option(None, "--max-concurrency", help="Requests in flight."),
    wall_budget: float = typer.Option(
        None, "--wall-budget", help="Seconds after which no candidate is launched."
    ),
    slo_ttft_ms: float = typer.Option(
        None, "--slo-ttft-ms", help="Median TTFT a chosen configuration must meet."
    ),
    slo_tpot_ms: float = typer.Option(
        None, "--slo-tpot-ms", help="Median TPOT a chosen configuration must meet."
    ),
    price: float = typer.Option(
        None, "--price-per-gpu-hour", help="Dollars per GPU-hour, for $ per million tokens."
    ),
    reference: list[str] = typer.Option(
        None, "--reference", help="NAME:TOK_S_PER_NODE[:PRICE[:GPUS]] row, e.g. B200:3192:6.5."
    ),
    exhaustive: bool = typer.Option(
        False, "--exhaustive", help="Also launch every candidate, and print both searches."
    ),
    verify: bool = typer.Option(None, "--verify/--no-verify", help="Relaunch the chosen configuration once."),
    moe_configs: bool = typer.Option(
        None, "--moe-configs/--no-moe-configs", help="Run the profile's MoE tuning script."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print tune.json instead of the tables."),
    show: bool = typer.Option(False, "--show", help="Print the last tune's results; launch nothing."),
) -> None:
    """Search the profile's serving space on the run's workload; write runs/RUN_ID/tune/."""
    if show:
        _show(run_id, as_json)
        return
    try:
        _, job, _, _ = load_run(run_id)
        overrides = {
            k: v
            for k, v in {
                "gpus": gpus,
                "workload_scale": scale,
                "num_prompts": num_prompts,
                "max_concurrency": max_concurrency,
                "wall_budget_s": wall_budget,
                "slo_ttft_ms": slo_ttft_ms,
                "slo_tpot_ms": slo_tpot_ms,
                "price_per_gpu_hour": price,
                "reference": reference or None,
                "verify": verify,
                "moe_configs": moe_configs,
            }.items()
            if v is not None
        }
        spec = job.tune.model_validate({**job.tune.model_dump(), **overrides})
        outcome = _tune_live(run_id, spec, exhaustive, as_json)
    except (TuneError, ReferenceError) as exc:
        raise fail(str(exc)) from None
    except ValueError as exc:  # pydantic: an option out of range
        raise fail(f"tune option: {str(exc).splitlines()[-1].strip()}") from None
    _print(outcome, run_id, as_json)


def _tune_live(run_id: str, spec, exhaustive: bool, as_json: bool):
    """tune_run with the live panel (a candidate's launch and benchmark take minutes): the phase and its
    clock, the command, the last line of the server's log; a heartbeat line without a terminal."""
    from agent.cli.output import console
    from agent.loop.progress import RichProgress

    done = 0

    def on_trial(strategy: str, t: Trial) -> None:
        nonlocal done
        done += 1
        if not as_json:
            _print_trial(strategy, t)
        progress({"event": "phase", "phase": f"tune: {done} candidate(s) measured, next after {t.key}"})

    progress = RichProgress(console(stderr=True), title="tune", events=False, counters=False)
    progress.logs = RunDir(run_id).logs
    with progress:
        progress({"event": "phase", "phase": "tune: MoE configs and the first candidate"})
        return tune_run(run_id, spec, exhaustive=exhaustive, on_trial=on_trial)


def _show(run_id: str, as_json: bool) -> None:
    try:
        path = RunDir(run_id).path / "tune" / OUTCOME_FILE
    except ValueError as exc:
        raise fail(str(exc)) from None
    outcome = load_outcome(path)
    if outcome is None:
        raise fail(f"run {run_id} has not been tuned ({path} is missing): run `rocport tune {run_id}`")
    _print(outcome, run_id, as_json)


def _print(outcome, run_id: str, as_json: bool) -> None:
    out = RunDir(run_id).path / "tune"
    if as_json:
        typer.echo(json.dumps(outcome.to_dict(), indent=2, default=str))
        return
    typer.echo("\n".join(["", *comparison_lines(outcome), "", *trial_table(outcome, outcome.search), ""]))
    if outcome.best:
        typer.echo("\n".join(chosen_lines(outcome, outcome.best)))
    typer.echo(f"\nresults: {out}/tune.md (plot {out}/tune.svg, data {out}/tune.json)")
    if not outcome.best:
        raise typer.Exit(1)
