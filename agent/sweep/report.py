"""Sweep reports: a markdown summary for a chat or an issue, and a static HTML dashboard."""

from __future__ import annotations

from agent.sweep.analysis import clusters, histories, regressions
from agent.sweep.dashboard import dashboard_html
from agent.sweep.results import STAGES, CellResult
from tools.tune.sections import sweep_markdown

__all__ = ["dashboard_html", "markdown"]


def _grid(results: list[CellResult]) -> tuple[list[str], list[str], dict[tuple[str, str], CellResult]]:
    nights = sorted({r.night for r in results})
    keys = sorted({r.cell_key for r in results})
    return nights, keys, {(r.cell_key, r.night): r for r in results}


def _stage_marks(r: CellResult) -> str:
    return "".join("✔" if r.stages.get(s) else "✘" for s in STAGES)


def status_of(r: CellResult, regs: list) -> str:
    """The cell's status, never a plain `passed` when it regressed that night."""
    what = [g.what for g in regs if g.cell_key == r.cell_key and g.night == r.night]
    if not what:
        return r.status
    return f"{r.status}, " + " and ".join(
        "throughput regression" if w == "throughput" else "lost a stage" for w in what
    )


def markdown(results: list[CellResult], title: str, history_nights: int = 7) -> str:
    """The latest night: pass/fail per cell, regressions, and failure clusters."""
    if not results:
        return f"# {title}\n\nNo results yet: run `rocport sweep run`.\n"
    nights, keys, grid = _grid(results)
    latest = nights[-1]
    passed = sum(1 for k in keys if (k, latest) in grid and grid[k, latest].status == "passed")
    lines = [
        f"# {title} — night {latest}",
        "",
        f"{passed}/{len(keys)} cells passed. Stages: {' → '.join(STAGES)}.",
        "",
        "| cell | status | stages | output tok/s | since | commit |",
        "|---|---|---|---|---|---|",
    ]
    regs = regressions(results, history_nights)
    for h in histories(results):
        r = h.latest
        tok = f"{r.output_tok_s:.1f}" if r.output_tok_s else "—"
        since = (
            f"broken since {h.broken_since}"
            if h.broken_since
            else f"fixed on {h.fixed_on}"
            if h.fixed_on
            else f"passing since {h.passing_since}"
        )
        commit = str((r.provenance or {}).get("framework_commit") or "")[:10]
        lines.append(
            f"| `{h.cell_key}` | {status_of(r, regs)} | {_stage_marks(r)} | {tok} | {since} | "
            f"{f'`{commit}`' if commit else '—'} |"  # a cell that never checked out has no commit
        )
    lines += ["", f"## Regressions ({len(regs)})", ""]
    lines += [f"- `{g.cell_key}` ({g.what}): {g.detail}" for g in regs] or ["None."]
    cls = clusters(results)
    lines += [
        "",
        f"## Failure clusters ({len(cls)})",
        "",
        "| signature | kind | cells (last night seen) | first seen | last seen | streak |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        f"| `{c.signature}` | {c.kind} | {len(c.cells)} | {c.first_seen} | {c.last_seen} | {c.streak} |"
        for c in cls
    ]
    lines += sweep_markdown(results)
    return "\n".join(lines) + "\n"
