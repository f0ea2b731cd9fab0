"""The tune results where users read them: the run report (markdown and HTML), the PR description and
the sweep dashboard. Each function reads runs/<id>/tune/tune.json and returns nothing when the run was
never tuned."""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from tools.tune.plot import plot
from tools.tune.render import markdown
from tools.tune.results import OUTCOME_FILE, TUNE_DIR, TuneOutcome, load_outcome


class CellResult(Protocol):
    """What the sweep tables read of one cell's result."""

    night: str
    cell_key: str
    bench: dict[str, Any] | None


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


def summary(run_dir: Path) -> dict[str, Any] | None:
    """What a sweep cell keeps of a tune: the chosen configuration and its figures."""
    outcome = _outcome(run_dir)
    best = outcome.best if outcome else None
    if not outcome or not best or not best.output_tok_s:
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


def _tuned(results: Sequence[CellResult]) -> list[CellResult]:
    latest = max((r.night for r in results), default=None)
    return [r for r in results if r.night == latest and (r.bench or {}).get("tune")]


def sweep_markdown(results: Sequence[CellResult]) -> list[str]:
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
        t = (r.bench or {})["tune"]
        usd = f"${t['usd_per_mtok']:.3f}" if t.get("usd_per_mtok") is not None else "–"
        lines.append(
            f"| `{r.cell_key}` | `{t['best']}` | {t['output_tok_s_per_node']:,.0f} | "
            f"{t['output_tok_s_per_gpu']:,.1f} | {usd} | {t['launches']} of {t['candidates']} |"
        )
    return lines


def sweep_html(results: Sequence[CellResult]) -> str:
    """The dashboard's tune table (empty when no cell of the latest night was tuned)."""
    lines = sweep_markdown(results)
    return (
        f'<h2>Serving configuration</h2><pre id="tune">{html.escape(chr(10).join(lines[3:]))}</pre>'
        if lines
        else ""
    )
