"""The tune results where users read them: the run report (markdown and HTML), the PR description,
the sweep dashboard, and the port continuing into a tune when its job asks for one. Each function
reads runs/<id>/tune/tune.json and returns nothing when the run was never tuned."""

from __future__ import annotations

import html
from pathlib import Path

from agent.tune.plot import plot
from agent.tune.render import markdown
from agent.tune.results import OUTCOME_FILE, TUNE_DIR, TuneOutcome, load_outcome


def _outcome(run_dir: Path) -> TuneOutcome | None:
    return load_outcome(Path(run_dir) / TUNE_DIR / OUTCOME_FILE)


def report_markdown(run_dir: Path) -> list[str]:
    """The report's tune section (the plot next to it as tune/tune.svg)."""
    outcome = _outcome(run_dir)
    return ["", markdown(outcome, f"{TUNE_DIR}/tune.svg")] if outcome else []


def report_html(run_dir: Path) -> str:
    """The tune section as HTML: the markdown tables in a <pre> and the plot inline."""
    outcome = _outcome(run_dir)
    if not outcome:
        return ""
    svg = plot(outcome)
    return (
        f'<h2>Serving configuration</h2><pre id="tune">{html.escape(markdown(outcome, None, "###"))}</pre>'
        f'<div id="tune-plot">{svg}</div>'
    )


def pr_markdown(run_dir: Path) -> list[str]:
    """The PR description's tune section (no plot: the PR cannot link a local file)."""
    outcome = _outcome(run_dir)
    return [markdown(outcome, None)] if outcome else []


def summary(run_dir: Path) -> dict | None:
    """What a sweep cell keeps of a tune: the chosen configuration and its figures."""
    outcome = _outcome(run_dir)
    best = outcome.best if outcome else None
    if not best:
        return None
    return {
        "best": best.key,
        "output_tok_s_per_node": best.output_tok_s,
        "gpus": best.gpus,
        "output_tok_s_per_gpu": round(best.output_tok_s / best.gpus, 2),
        "usd_per_mtok": outcome.usd_per_mtok(best),
        "launches": outcome.search.launches,
        "candidates": outcome.search.grid_size,
        "command": outcome.chosen_command,
    }


def with_tune(bench: dict | None, run_id: str | None) -> dict | None:
    """A sweep cell's bench JSON with the run's tune summary under "tune" (unchanged when untuned)."""
    from agent.loop.rundir import RunDir

    if not bench or not run_id:
        return bench
    found = summary(RunDir(run_id).path)
    return {**bench, "tune": found} if found else bench


def _tuned(results) -> list:
    latest = max((r.night for r in results), default=None)
    return [r for r in results if r.night == latest and (r.bench or {}).get("tune")]


def sweep_markdown(results) -> list[str]:
    """The dashboard summary's tune table: one row per tuned cell of the latest night."""
    rows = _tuned(results)
    if not rows:
        return []
    lines = [
        "",
        "## Serving configuration (rocport tune)",
        "",
        "| cell | chosen | output tok/s per node | per GPU | $/Mtok | launches |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        t = r.bench["tune"]
        usd = f"${t['usd_per_mtok']:.3f}" if t.get("usd_per_mtok") is not None else "–"
        lines.append(
            f"| `{r.cell_key}` | `{t['best']}` | {t['output_tok_s_per_node']:,.0f} | "
            f"{t['output_tok_s_per_gpu']:,.1f} | {usd} | {t['launches']} of {t['candidates']} |"
        )
    return lines


def sweep_html(results) -> str:
    """The dashboard's tune table (empty when no cell of the latest night was tuned)."""
    lines = sweep_markdown(results)
    return (
        f'<h2>Serving configuration</h2><pre id="tune">{html.escape(chr(10).join(lines[3:]))}</pre>'
        if lines
        else ""
    )


def continue_into_tune(job, run_id: str, status: str, observer) -> None:
    """After a green port whose job has `tune.enabled`, run the tune and re-render the report."""
    if status != "green" or not job.tune.enabled:
        return
    from agent.tune.results import ReferenceError
    from agent.tune.run import TuneError, tune_run

    def progress(strategy: str, t) -> None:
        numbers = f"{t.output_tok_s:,.0f} output tok/s" if t.measured else t.reason
        observer.emit("note", message=f"tune [{strategy}] {t.key}: {t.status} ({numbers})")

    try:
        outcome = tune_run(run_id, job.tune, on_trial=progress)
    except (TuneError, ReferenceError) as exc:
        observer.emit("note", message=f"tune not run: {exc}")
        return
    best = outcome.best
    observer.emit(
        "tune",
        best=best.key if best else None,
        launches=outcome.search.launches,
        candidates=outcome.search.grid_size,
        output_tok_s=best.output_tok_s if best else None,
    )
    _rerender_report(run_id)


def _rerender_report(run_id: str) -> None:
    from agent.loop.rundir import RunDir
    from tools.report import RunView, render_markdown
    from tools.report_html import render_html

    path = RunDir(run_id).path
    view = RunView.load(path)
    (path / "report.md").write_text(render_markdown(view))
    (path / "report.html").write_text(render_html(view))
