"""The run report as one static HTML page: a header saying what was ported where (model, framework,
arch, image) with a status badge, a phase timeline chart, what ran and what was skipped, each patch
with its diff inline, and the benchmark as latency small multiples and throughput bars on real axes."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from tools import git as gitops
from tools.host_paths import public_text
from tools.report import (
    LATENCY_METRICS,
    PERCENTILES,
    UNIT_HEADER,
    RunView,
    bench_rows,
    failure_fates,
    phase_timeline,
    scan_rows,
    stage_rows,
    unit_rows,
)
from tools.report_svg import panels_svg, timeline_svg

_CSS = """body{font:14px system-ui,sans-serif;margin:24px;max-width:1200px;color:#1f2328}
table{border-collapse:collapse;margin:8px 0 20px}td,th{border:1px solid #d0d7de;padding:4px 8px;text-align:left;
vertical-align:top}th{background:#f6f8fa}.fixed{background:#dafbe1}.reverted,.open{background:#ffebe9}
.muted{color:#6e7781}code{font-size:12px}text{font:11px system-ui,sans-serif}text.title{font-weight:600}
text.unit{fill:#57606a}.badge{display:inline-block;padding:2px 10px;border-radius:12px;color:#fff;font-weight:600}
.badge.green{background:#1a7f37}.badge.partial{background:#bf8700}.badge.failed{background:#cf222e}
.meta td:first-child{font-weight:600;background:#f6f8fa}pre.diff{background:#f6f8fa;padding:8px;overflow-x:auto;
font-size:12px}pre.diff .add{color:#1a7f37}pre.diff .del{color:#cf222e}pre.diff .hunk{color:#8250df}
.skipped td{color:#6e7781}"""


def _table(
    header: list[str], rows: list[list[str]], table_id: str, row_class: list[str] | None = None
) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join(
        f'<tr class="{row_class[i] if row_class else ""}">' + "".join(f"<td>{c}</td>" for c in r) + "</tr>"
        for i, r in enumerate(rows)
    )
    return f'<table id="{table_id}"><tr>{head}</tr>{body}</table>'


def _esc_rows(rows: list[list[str]]) -> list[list[str]]:
    return [[html.escape(str(c)) for c in r] for r in rows]


def diff_html(diff: str) -> str:
    """A unified diff with added, removed and hunk lines coloured."""
    out = []
    for line in diff.splitlines():
        css = (
            "add"
            if line.startswith("+") and not line.startswith("+++")
            else "del"
            if line.startswith("-") and not line.startswith("---")
            else "hunk"
            if line.startswith("@@")
            else ""
        )
        out.append(f'<span class="{css}">{html.escape(line)}</span>' if css else html.escape(line))
    return '<pre class="diff">' + "\n".join(out) + "</pre>"


def _patch_diff(outcome: dict[str, Any], repo: Path) -> str:
    """The patch as proposed, or as committed when the proposal kept no text."""
    diff = outcome["proposal"].get("diff") or ""
    if not diff and outcome.get("commit") and (repo / ".git").exists():
        proc = gitops.run(repo, "show", "--format=", outcome["commit"], ok=range(256))
        diff = proc.stdout if proc.returncode == 0 else ""
    return diff


def header_rows(view: RunView) -> list[list[str]]:
    """What was ported where: model, framework at its commit, target arch, image."""
    job = view.job
    s = view.state
    model = job.get("model") or {}
    fw = job.get("framework") or {}
    target = job.get("target") or {}
    # the checkpoint's folder name: its host path would be rewritten to $MODEL_PATH for readers elsewhere
    name = model.get("name") or (Path(str(model["path"])).name if model.get("path") else "(build only)")
    return [
        ["model", name],
        [
            "framework",
            f"{fw.get('profile', '?')} @ {fw.get('ref', 'main')} ({str(s.get('base_commit', ''))[:12]})",
        ],
        ["target", target.get("arch", "?")],
        ["image", target.get("image") or "the profile's default"],
        ["work branch", s.get("branch", "")],
    ]


def _patches(view: RunView) -> str:
    s, esc = view.state, html.escape
    repo = Path(s.get("repo_dir") or view.path / "repo")
    blocks = []
    for i, o in enumerate(s.get("outcomes", []), 1):
        verdict = "kept" if o.get("kept") else f"reverted: {o.get('reason', '')}"
        checks = "".join(
            f"<li>{'✔' if ck['ok'] else '✘'} {esc(ck['name'])}</li>" for ck in o.get("checks", [])
        )
        diff = _patch_diff(o, repo)
        blocks.append(
            f"<h3>{i}. {esc(o['proposal']['proposer'])} — {esc(', '.join(o['proposal'].get('files', [])))}"
            f" ({esc(verdict)})</h3><p>{esc(o['proposal'].get('rationale', ''))}</p><ul>{checks}</ul>"
            + (
                f"<details{' open' if o.get('kept') else ''}><summary>diff</summary>{diff_html(diff)}"
                f"</details>"
                if diff
                else ""
            )
        )
    summary = _table(
        ["#", "proposer", "files", "verdict", "checks"],
        [
            [
                str(i),
                esc(o["proposal"]["proposer"]),
                esc(", ".join(o["proposal"].get("files", []))),
                "kept" if o.get("kept") else esc(f"reverted: {o.get('reason', '')}"),
                "<br>".join(f"{'✔' if ck['ok'] else '✘'} {esc(ck['name'])}" for ck in o.get("checks", [])),
            ]
            for i, o in enumerate(s.get("outcomes", []), 1)
        ],
        "patches",
    )
    return summary + "".join(blocks)


def _bench(bench: dict[str, Any] | None) -> str:
    if not bench:
        return '<p class="muted">No benchmark ran.</p>'
    esc = html.escape
    rows, pairs = bench_rows(bench)
    panels = [
        (label, [(p, bench.get(f"{p}_{key}_ms")) for p in PERCENTILES])
        for key, label in LATENCY_METRICS
        if any(bench.get(f"{p}_{key}_ms") is not None for p in PERCENTILES)
    ]
    tok = [(label.replace(" tok/s", ""), v) for label, v in pairs if "tok/s" in label]
    req = [(label, v) for label, v in pairs if "tok/s" not in label]
    out = (
        _table(["metric (ms)", *PERCENTILES], rows, "latency")
        + panels_svg(panels, "ms", "latency-plot")
        + _table(["throughput", "value"], [[esc(k), f"{v:.2f}"] for k, v in pairs], "throughput")
        + panels_svg(
            [("tokens per second", tok)] + ([("requests per second", req)] if req else []),
            "per s",
            "throughput-plot",
            panel_w=260,
        )
    )
    if bench.get("command"):
        out = f"<p>Command: <code>{esc(bench['command'])}</code></p>" + out
    return out


def render_html(view: RunView) -> str:
    s, esc = view.state, html.escape
    c = s.get("counters", {})
    status = str(s.get("status", "?"))
    phases = phase_timeline(view.events)
    timeline = timeline_svg(phases) + _table(
        ["phase", "at (s)", "took (s)"], [[esc(p), f"{t:.1f}", f"{d:.1f}"] for p, t, d in phases], "timeline"
    )
    fates = failure_fates(s)
    failures = _table(
        ["failure", "fate", "by", "detail"],
        [
            [f"<code>{esc(f['signature'])}</code>", esc(f["fate"]), esc(f["proposer"]), esc(f["detail"])]
            for f in fates
        ],
        "failures",
        [f["fate"].replace(" ", "-") for f in fates],
    )
    cost = c.get("cost_usd")
    costs = _table(
        ["what", "count"],
        [
            ["full builds", str(c.get("builds", 0))],
            ["unit compiles", str(c.get("unit_compiles", 0))],
            ["server launches", str(c.get("launches", 0))],
            ["LLM tokens (in/out)", f"{c.get('tokens_in', 0)}/{c.get('tokens_out', 0)}"],
            ["LLM cost", "unknown (no pricing configured)" if cost is None else f"${cost:.4f}"],
            ["wall time (s)", f"{s.get('elapsed_s', 0):.1f}"],
        ],
        "costs",
    )
    staged = stage_rows(s, view.events)
    stages = _table(
        ["stage", "ran", "why / result"],
        _esc_rows(staged),
        "stages",
        ["skipped" if r[1] == "skipped" else "" for r in staged],
    )
    pre = s.get("stages", {}).get("preflight", {})
    if pre.get("checks"):
        stages += _table(
            ["image needs", "ok", "found", "for"],
            _esc_rows(
                [[ck["need"], "yes" if ck["ok"] else "NO", ck["found"], ck["why"]] for ck in pre["checks"]]
            ),
            "preflight",
        )
    if unit_rows(s):
        stages += _table(UNIT_HEADER, _esc_rows(unit_rows(s)), "units")
    findings = s.get("scan", [])
    scan = (
        _table(["kind", "where", "construct", "fix family"], _esc_rows(scan_rows(s)), "scan")
        if findings
        else '<p class="muted">No findings.</p>'
    )
    raw = json.dumps(s.get("bench") or {}).replace("</", "<\\/")
    badge = status if status in ("green", "partial") else "failed"
    meta = _table(["", ""], _esc_rows(header_rows(view)), "run-meta").replace(
        '<table id="run-meta">', '<table id="run-meta" class="meta">'
    )
    return public_text(
        f"""<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>rocport run {esc(view.run_id)}</title><style>{_CSS}</style></head><body>
<h1>rocport run {esc(view.run_id)} <span class="badge {badge}" id="status-badge">{esc(status)}</span></h1>
<p>{esc(s.get("stop_reason", ""))}</p>{meta}
<h2>Timeline</h2>{timeline}<h2>Stages</h2>{stages}<h2>Static scan ({len(findings)})</h2>{scan}
<h2>Failures and their fate</h2>{failures}<h2>Patches</h2>{_patches(view)}<h2>Costs</h2>{costs}
<h2>Benchmark</h2>{_bench(s.get("bench"))}{_tune_html(view.path)}
<script type="application/json" id="bench-json">{raw}</script>
</body></html>
""",
        view,
    )


def _tune_html(run_dir: Path) -> str:
    from tools.tune.sections import report_html  # the tune section, when the run was tuned

    return report_html(run_dir)
