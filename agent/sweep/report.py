"""Sweep reports: a markdown summary for a chat or an issue, and a static HTML dashboard."""
from __future__ import annotations

import html
import json

from agent.sweep.analysis import clusters, histories, regressions
from agent.sweep.results import STAGES, CellResult
from agent.tune.sections import sweep_html, sweep_markdown


def _grid(results: list[CellResult]) -> tuple[list[str], list[str], dict[tuple[str, str], CellResult]]:
    nights = sorted({r.night for r in results})
    keys = sorted({r.cell_key for r in results})
    return nights, keys, {(r.cell_key, r.night): r for r in results}


def _stage_marks(r: CellResult) -> str:
    return "".join("✔" if r.stages.get(s) else "✘" for s in STAGES)


def markdown(results: list[CellResult], title: str, history_nights: int = 7) -> str:
    """The latest night: pass/fail per cell, regressions, and failure clusters."""
    if not results:
        return f"# {title}\n\nNo results yet: run `rocport sweep run`.\n"
    nights, keys, grid = _grid(results)
    latest = nights[-1]
    passed = sum(1 for k in keys if (k, latest) in grid and grid[k, latest].status == "passed")
    lines = [f"# {title} — night {latest}", "",
             f"{passed}/{len(keys)} cells passed. Stages: {' → '.join(STAGES)}.", "",
             "| cell | status | stages | output tok/s | since |", "|---|---|---|---|---|"]
    for h in histories(results):
        r = h.latest
        tok = f"{r.output_tok_s:.1f}" if r.output_tok_s else "—"
        since = (f"broken since {h.broken_since}" if h.broken_since
                 else f"fixed on {h.fixed_on}" if h.fixed_on else f"passing since {h.passing_since}")
        lines.append(f"| `{h.cell_key}` | {r.status} | {_stage_marks(r)} | {tok} | {since} |")
    regs = regressions(results, history_nights)
    lines += ["", f"## Regressions ({len(regs)})", ""]
    lines += [f"- `{g.cell_key}` ({g.what}): {g.detail}" for g in regs] or ["None."]
    cls = clusters(results)
    lines += ["", f"## Failure clusters ({len(cls)})", "",
              "| signature | kind | cells (last night seen) | first seen | last seen | streak |",
              "|---|---|---|---|---|---|"]
    lines += [f"| `{c.signature}` | {c.kind} | {len(c.cells)} | {c.first_seen} | {c.last_seen} | {c.streak} |"
              for c in cls]
    lines += sweep_markdown(results)
    return "\n".join(lines) + "\n"


def _sparkline(values: list[float | None], width: int = 160, height: int = 36) -> str:
    points = [(i, v) for i, v in enumerate(values) if v]
    if not points:
        return '<span class="muted">no throughput</span>'
    top = max(v for _, v in points) * 1.1
    step = width / max(1, len(values) - 1)
    coords = " ".join(f"{i * step:.1f},{height - v / top * height:.1f}" for i, v in points)
    dots = "".join(f'<circle cx="{i * step:.1f}" cy="{height - v / top * height:.1f}" r="2.5"><title>{v:.1f} tok/s'
                   f'</title></circle>' for i, v in points)
    return (f'<svg class="trend" width="{width + 6}" height="{height + 6}" viewBox="-3 -3 {width + 6} {height + 6}" '
            f'role="img"><polyline points="{coords}" fill="none" stroke="#1f6feb" stroke-width="1.5"/>{dots}</svg>')


_CSS = """body{font:14px system-ui,sans-serif;margin:24px;color:#1f2328}table{border-collapse:collapse;margin:8px 0 24px}
td,th{border:1px solid #d0d7de;padding:4px 8px;text-align:left}th{background:#f6f8fa}.pass{background:#dafbe1}
.fail{background:#ffebe9}.error{background:#fff8c5}.muted{color:#6e7781}code{font-size:12px}circle{fill:#1f6feb}"""


def dashboard_html(results: list[CellResult], title: str, history_nights: int = 7) -> str:
    """A static page: the pass/fail grid over nights, throughput trends, regressions, clusters."""
    nights, keys, grid = _grid(results)
    esc = html.escape
    head = "".join(f"<th>{esc(n)}</th>" for n in nights)
    rows = []
    for key in keys:
        cells = []
        for n in nights:
            r = grid.get((key, n))
            if r is None:
                cells.append('<td class="muted">—</td>')
                continue
            css = {"passed": "pass", "failed": "fail"}.get(r.status, "error")
            tip = esc(r.reason or r.status)
            cells.append(f'<td class="{css}" title="{tip}">{esc(r.status)} {_stage_marks(r)}</td>')
        trend = _sparkline([grid[key, n].output_tok_s if (key, n) in grid else None for n in nights])
        rows.append(f"<tr><th><code>{esc(key)}</code></th>{''.join(cells)}<td>{trend}</td></tr>")
    regs = regressions(results, history_nights)
    reg_rows = "".join(f"<tr><td><code>{esc(g.cell_key)}</code></td><td>{esc(g.what)}</td><td>{esc(g.night)}</td>"
                       f"<td>{esc(g.detail)}</td></tr>" for g in regs) or '<tr><td colspan="4">None</td></tr>'
    cls = clusters(results)
    cl_rows = "".join(f"<tr><td><code>{esc(c.signature)}</code></td><td>{esc(c.kind)}</td><td>{len(c.cells)}</td>"
                      f"<td>{esc(c.first_seen)}</td><td>{esc(c.last_seen)}</td><td>{c.streak}</td></tr>"
                      for c in cls) or '<tr><td colspan="6">None</td></tr>'
    data = json.dumps([r.to_dict() for r in results]).replace("</", "<\\/")  # raw text inside <script>
    return f"""<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>
<style>{_CSS}</style></head><body>
<h1>{esc(title)}</h1>
<p class="muted">{len(keys)} cells over {len(nights)} nights; stages per cell: {' → '.join(STAGES)}.</p>
<h2>Pass/fail grid</h2>
<table id="grid"><tr><th>cell</th>{head}<th>output tok/s trend</th></tr>{''.join(rows)}</table>
<h2>Regressions ({len(regs)})</h2>
<table id="regressions"><tr><th>cell</th><th>what</th><th>night</th><th>detail</th></tr>{reg_rows}</table>
<h2>Failure clusters ({len(cls)})</h2>
<table id="clusters"><tr><th>signature</th><th>kind</th><th>cells</th><th>first seen</th><th>last seen</th>
<th>streak</th></tr>{cl_rows}</table>{sweep_html(results)}
<script type="application/json" id="results">{data}</script>
</body></html>
"""
