"""The tune where the agent continues into it: a sweep cell's bench JSON with the run's tune summary, and a
green port whose job asks for a tune (the rendering is tools.tune.sections)."""

from __future__ import annotations

from tools.tune.sections import summary


def with_tune(bench: dict | None, run_id: str | None) -> dict | None:
    """A sweep cell's bench JSON with the run's tune summary under "tune" (unchanged when untuned)."""
    from agent.loop.rundir import RunDir

    if not bench or not run_id:
        return bench
    found = summary(RunDir(run_id).path)
    return {**bench, "tune": found} if found else bench


def continue_into_tune(job, run_id: str, status: str, observer) -> None:
    """After a green port whose job has `tune.enabled`, run the tune and re-render the report."""
    if status != "green" or not job.tune.enabled:
        return
    from agent.tune.run import TuneError, tune_run
    from tools.tune.results import ReferenceError

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
