"""The sweep's static HTML dashboard: the pass/fail grid over nights (a throughput regression is never
green), per-cell sparklines with axes and values, links to each cell's run report and logs, commit
hashes, a model x hardware pivot of the latest night, and output throughput against latency."""

from __future__ import annotations

import html
import json

from agent.sweep.analysis import clusters, regressions
from agent.sweep.results import STAGES, CellResult
from tools.report_svg import nice_ticks, scatter_svg
from tools.tune.sections import sweep_html

_CSS = """body{font:14px system-ui,sans-serif;margin:24px;color:#1f2328}
table{border-collapse:collapse;margin:8px 0 24px}
td,th{border:1px solid #d0d7de;padding:4px 8px;text-align:left;vertical-align:top}th{background:#f6f8fa}
.pass{background:#dafbe1}.fail{background:#ffebe9}.error{background:#fff8c5}.regress{background:#ffd8b5}
.muted{color:#6e7781}code{font-size:12px}text{font:10px system-ui,sans-serif}a{color:#0969da}
.links{font-size:12px}.commit{font:11px ui-monospace,monospace;color:#57606a}"""


def split_key(key: str) -> tuple[str, str, str, str]:
    """(framework@ref, model, target, workload) of a cell key; a ref may itself hold slashes."""
    parts = key.rsplit("/", 3)
    if len(parts) < 4:  # a key written by hand or by an older rocport
        return key, "(unknown)", "(unknown)", "(unknown)"
    return parts[0], parts[1], parts[2], parts[3]


def _short(key: str) -> str:
    """`v0.1 tiny-moe/mi300x`: enough of a cell key to tell the points of one plot apart."""
    head, model, target, _ = split_key(key)
    return f"{head.split('@', 1)[-1]} {model}/{target}"


def _run_links(r: CellResult) -> str:
    from agent.loop.rundir import rocport_home

    run_id = (r.provenance or {}).get("run_id")
    if not run_id:
        return ""
    run = rocport_home() / "runs" / run_id
    return (
        f'<span class="links"><a href="{(run / "report.html").as_uri()}">report</a> · '
        f'<a href="{(run / "logs").as_uri()}/">logs</a></span>'
    )


def sparkline_svg(values: list[float | None], nights: list[str], width: int = 200, height: int = 46) -> str:
    """Output tok/s per night: a 0-based axis with its top tick, first and last night, every value on hover
    and the latest written out."""
    points = [(i, v) for i, v in enumerate(values) if v]
    if not points:
        return '<span class="muted">no throughput</span>'
    top = nice_ticks(max(v for _, v in points), 5)[-1]
    left, bottom = 34, 14
    step = (width - left - 30) / max(1, len(values) - 1)
    xy = [(left + i * step, (height - bottom) - v / top * (height - bottom - 4)) for i, v in points]
    line = " ".join(f"{x:.1f},{y:.1f}" for x, y in xy)
    dots = "".join(
        f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="#1f6feb"><title>{html.escape(nights[i])}: '
        f"{v:.1f} tok/s</title></circle>"
        for (x, y), (i, v) in zip(xy, points, strict=True)
    )
    last_x, last_y = xy[-1]
    return (
        f'<svg class="trend" width="{width}" height="{height}" role="img" aria-label="output tok/s by night">'
        f'<line x1="{left}" y1="2" x2="{left}" y2="{height - bottom}" stroke="#6e7781"/>'
        f'<line x1="{left}" y1="{height - bottom}" x2="{width - 28}" y2="{height - bottom}" stroke="#6e7781"/>'
        f'<text x="{left - 3}" y="9" text-anchor="end">{top:g}</text>'
        f'<text x="{left - 3}" y="{height - bottom}" text-anchor="end">0</text>'
        f'<text x="{left}" y="{height - 2}">{html.escape(nights[0][5:])}</text>'
        f'<text x="{width - 28}" y="{height - 2}" text-anchor="end">{html.escape(nights[-1][5:])}</text>'
        f'<polyline points="{line}" fill="none" stroke="#1f6feb" stroke-width="1.5"/>{dots}'
        f'<text x="{last_x + 4:.1f}" y="{last_y + 3:.1f}">{points[-1][1]:.0f}</text></svg>'
    )


def _cell(r: CellResult, regressed: dict[tuple[str, str], str]) -> str:
    what = regressed.get((r.cell_key, r.night))
    css = "regress" if what else {"passed": "pass", "failed": "fail"}.get(r.status, "error")
    marks = "".join("✔" if r.stages.get(s) else "✘" for s in STAGES)
    commit = str((r.provenance or {}).get("framework_commit", ""))[:10]
    label = f"{r.status}, {what}" if what else r.status
    tok = f"<br>{r.output_tok_s:.1f} tok/s" if r.output_tok_s else ""
    return (
        f'<td class="{css}" title="{html.escape(r.reason or label)}">{html.escape(label)} {marks}{tok}<br>'
        f'<span class="commit">{html.escape(commit)}</span> {_run_links(r)}</td>'
    )


def _pivot(results: list[CellResult], night: str, regressed: dict[tuple[str, str], str]) -> str:
    latest = [r for r in results if r.night == night]
    models = sorted({split_key(r.cell_key)[1] for r in latest})
    targets = sorted({split_key(r.cell_key)[2] for r in latest})
    rows = []
    for m in models:
        tds = []
        for t in targets:
            mine = [r for r in latest if split_key(r.cell_key)[1:3] == (m, t)]
            if not mine:
                tds.append('<td class="muted">—</td>')
                continue
            ok = sum(r.status == "passed" for r in mine)
            worse = sum((r.cell_key, r.night) in regressed for r in mine)
            best = max((r.output_tok_s or 0 for r in mine), default=0)
            css = "fail" if ok == 0 else "regress" if worse else "pass" if ok == len(mine) else "error"
            tds.append(
                f'<td class="{css}">{ok}/{len(mine)} passed'
                + (f", {worse} regressed" if worse else "")
                + (f"<br>best {best:.1f} tok/s" if best else "")
                + "</td>"
            )
        rows.append(f"<tr><th>{html.escape(m)}</th>{''.join(tds)}</tr>")
    head = "".join(f"<th>{html.escape(t)}</th>" for t in targets)
    return f'<table id="pivot"><tr><th>model \\ hardware</th>{head}</tr>{"".join(rows)}</table>'


def dashboard_html(results: list[CellResult], title: str, history_nights: int = 7) -> str:
    """A static page: grid, trends, pivot, throughput vs latency, regressions, failure clusters."""
    esc = html.escape
    nights = sorted({r.night for r in results})
    keys = sorted({r.cell_key for r in results})
    grid = {(r.cell_key, r.night): r for r in results}
    regs = regressions(results, history_nights)
    regressed = {
        (g.cell_key, g.night): ("lost a stage" if g.what == "stage_lost" else "throughput regression")
        for g in regs
    }
    head = "".join(f"<th>{esc(n)}</th>" for n in nights)
    rows = []
    for key in keys:
        cells = "".join(
            _cell(grid[key, n], regressed) if (key, n) in grid else '<td class="muted">—</td>' for n in nights
        )
        trend = sparkline_svg(
            [grid[key, n].output_tok_s if (key, n) in grid else None for n in nights], nights
        )
        rows.append(f"<tr><th><code>{esc(key)}</code></th>{cells}<td>{trend}</td></tr>")
    latest = nights[-1] if nights else ""
    points = [
        (_short(r.cell_key), float(r.bench["median_tpot_ms"]), r.output_tok_s)
        for r in results
        if r.night == latest and r.output_tok_s and r.bench and r.bench.get("median_tpot_ms") is not None
    ]
    reg_rows = (
        "".join(
            f"<tr><td><code>{esc(g.cell_key)}</code></td><td>{esc(g.what)}</td><td>{esc(g.night)}</td>"
            f"<td>{esc(g.detail)}</td></tr>"
            for g in regs
        )
        or '<tr><td colspan="4">None</td></tr>'
    )
    cls = clusters(results)
    cl_rows = (
        "".join(
            f"<tr><td><code>{esc(c.signature)}</code></td><td>{esc(c.kind)}</td><td>{len(c.cells)}</td>"
            f"<td>{esc(c.first_seen)}</td><td>{esc(c.last_seen)}</td><td>{c.streak}</td></tr>"
            for c in cls
        )
        or '<tr><td colspan="6">None</td></tr>'
    )
    data = json.dumps([r.to_dict() for r in results]).replace("</", "<\\/")  # raw text inside <script>
    return f"""<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>
<style>{_CSS}</style></head><body>
<h1>{esc(title)}</h1>
<p class="muted">{len(keys)} cells over {len(nights)} nights; stages per cell: {" → ".join(STAGES)}.
Amber: passed but regressed against the recent nights.</p>
<h2>Pass/fail grid</h2>
<table id="grid"><tr><th>cell</th>{head}<th>output tok/s by night</th></tr>{"".join(rows)}</table>
<h2>Model × hardware, night {esc(latest)}</h2>{_pivot(results, latest, regressed)}
<h2>Output throughput vs latency, night {esc(latest)}</h2>
{scatter_svg(points, "median TPOT (ms)", "output tok/s", "throughput-latency")}
<h2>Regressions ({len(regs)})</h2>
<table id="regressions"><tr><th>cell</th><th>what</th><th>night</th><th>detail</th></tr>{reg_rows}</table>
<h2>Failure clusters ({len(cls)})</h2>
<table id="clusters"><tr><th>signature</th><th>kind</th><th>cells</th><th>first seen</th><th>last seen</th>
<th>streak</th></tr>{cl_rows}</table>{sweep_html(results)}
<script type="application/json" id="results">{data}</script>
</body></html>
"""
