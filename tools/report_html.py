"""The run report as one static HTML page: tables plus SVG plots of latency percentiles and throughput."""
from __future__ import annotations

import html
import json

from tools.report import PERCENTILES, RunView, bench_rows, failure_fates, phase_timeline

_CSS = """body{font:14px system-ui,sans-serif;margin:24px;max-width:1100px;color:#1f2328}
table{border-collapse:collapse;margin:8px 0 20px}td,th{border:1px solid #d0d7de;padding:4px 8px;text-align:left;
vertical-align:top}th{background:#f6f8fa}.fixed{background:#dafbe1}.reverted,.open{background:#ffebe9}
.muted{color:#6e7781}code{font-size:12px}rect.bar{fill:#1f6feb}text{font:11px system-ui,sans-serif}"""
_COLORS = ("#1f6feb", "#8250df", "#bf8700", "#cf222e", "#1a7f37")


def _table(header: list[str], rows: list[list[str]], table_id: str, row_class: list[str] | None = None) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join(
        f"<tr class=\"{row_class[i] if row_class else ''}\">" + "".join(f"<td>{c}</td>" for c in r) + "</tr>"
        for i, r in enumerate(rows))
    return f'<table id="{table_id}"><tr>{head}</tr>{body}</table>'


def latency_svg(rows: list[list[str]], width: int = 640, height: int = 240) -> str:
    """Grouped bars: one group per metric, one bar per statistic (mean, median, p90, p95, p99)."""
    values = [[float(v) if v != "—" else 0.0 for v in r[1:]] for r in rows]
    top = max((v for r in values for v in r), default=0) or 1.0
    group_w = (width - 60) / max(1, len(rows))
    bar_w = group_w / (len(PERCENTILES) + 1)
    parts = [f'<svg id="latency-plot" width="{width}" height="{height + 40}" role="img" '
             f'aria-label="latency percentiles (ms)">',
             f'<line x1="50" y1="{height}" x2="{width}" y2="{height}" stroke="#6e7781"/>',
             f'<text x="0" y="12">{top:.1f} ms</text><text x="0" y="{height}">0</text>']
    for g, (row, vals) in enumerate(zip(rows, values)):
        x0 = 55 + g * group_w
        for i, v in enumerate(vals):
            h = v / top * (height - 20)
            parts.append(f'<rect x="{x0 + i * bar_w:.1f}" y="{height - h:.1f}" width="{bar_w - 2:.1f}" '
                         f'height="{h:.1f}" fill="{_COLORS[i]}"><title>{row[0]} {PERCENTILES[i]}: {v:.2f} ms'
                         f'</title></rect>')
        parts.append(f'<text x="{x0:.1f}" y="{height + 16}">{html.escape(row[0])}</text>')
    legend = "".join(f'<rect x="{55 + i * 80}" y="{height + 24}" width="10" height="10" fill="{_COLORS[i]}"/>'
                     f'<text x="{69 + i * 80}" y="{height + 33}">{p}</text>' for i, p in enumerate(PERCENTILES))
    return "".join(parts) + legend + "</svg>"


def throughput_svg(pairs: list[tuple[str, float]], width: int = 640) -> str:
    """Horizontal bars, one per throughput kind, each labelled with its unit."""
    top = max((v for _, v in pairs), default=0) or 1.0
    rows = []
    for i, (label, v) in enumerate(pairs):
        w = v / top * (width - 220)
        rows.append(f'<text x="0" y="{i * 28 + 17}">{html.escape(label)}</text>'
                    f'<rect class="bar" x="110" y="{i * 28 + 4}" width="{w:.1f}" height="18"/>'
                    f'<text x="{116 + w:.1f}" y="{i * 28 + 17}">{v:.2f}</text>')
    return (f'<svg id="throughput-plot" width="{width}" height="{len(pairs) * 28 + 8}" role="img" '
            f'aria-label="throughput">{"".join(rows)}</svg>')


def render_html(view: RunView) -> str:
    s, esc = view.state, html.escape
    c = s.get("counters", {})
    timeline = _table(["phase", "at (s)", "took (s)"],
                      [[esc(p), f"{t:.1f}", f"{d:.1f}"] for p, t, d in phase_timeline(view.events)], "timeline")
    fates = failure_fates(s)
    failures = _table(["failure", "fate", "by", "detail"],
                      [[f"<code>{esc(f['signature'])}</code>", esc(f["fate"]), esc(f["proposer"]), esc(f["detail"])]
                       for f in fates], "failures", [f["fate"].replace(" ", "-") for f in fates])
    patches = _table(["#", "proposer", "files", "verdict", "checks"], [
        [str(i), esc(o["proposal"]["proposer"]), esc(", ".join(o["proposal"].get("files", []))),
         "kept" if o.get("kept") else esc(f"reverted: {o.get('reason', '')}"),
         "<br>".join(f"{'✔' if ck['ok'] else '✘'} {esc(ck['name'])}" for ck in o.get("checks", []))]
        for i, o in enumerate(s.get("outcomes", []), 1)], "patches")
    cost = c.get("cost_usd")
    costs = _table(["what", "count"], [
        ["full builds", str(c.get("builds", 0))], ["unit compiles", str(c.get("unit_compiles", 0))],
        ["server launches", str(c.get("launches", 0))],
        ["LLM tokens (in/out)", f"{c.get('tokens_in', 0)}/{c.get('tokens_out', 0)}"],
        ["LLM cost", "unknown (no pricing configured)" if cost is None else f"${cost:.4f}"],
        ["wall time (s)", f"{s.get('elapsed_s', 0):.1f}"]], "costs")
    stages = _table(["stage", "status", "detail"], [[esc(k), esc(v.get("status", "")), esc(v.get("detail", ""))]
                                                    for k, v in s.get("stages", {}).items()], "stages")
    bench_html = '<p class="muted">No benchmark ran.</p>'
    bench = s.get("bench")
    if bench:
        rows, pairs = bench_rows(bench)
        bench_html = (_table(["metric (ms)", *PERCENTILES], rows, "latency") + latency_svg(rows)
                      + _table(["throughput", "value"], [[esc(k), f"{v:.2f}"] for k, v in pairs], "throughput")
                      + throughput_svg(pairs))
        if bench.get("command"):
            bench_html = f"<p>Command: <code>{esc(bench['command'])}</code></p>" + bench_html
    raw = json.dumps(bench or {}).replace("</", "<\\/")
    return f"""<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>rocport run {esc(view.run_id)}</title><style>{_CSS}</style></head><body>
<h1>rocport run {esc(view.run_id)}</h1>
<p><b>Status:</b> {esc(s.get('status', '?'))} — {esc(s.get('stop_reason', ''))}<br>
Work branch <code>{esc(s.get('branch', ''))}</code> from <code>{esc(str(s.get('base_commit', ''))[:12])}</code></p>
<h2>Timeline</h2>{timeline}<h2>Stages</h2>{stages}<h2>Failures and their fate</h2>{failures}
<h2>Patches</h2>{patches}<h2>Costs</h2>{costs}<h2>Benchmark</h2>{bench_html}
<script type="application/json" id="bench-json">{raw}</script>
</body></html>
"""
