"""The run report: what happened in a port run, as markdown and as data for the HTML page.

Reads only the run directory (state.json, events.jsonl, job.yaml, bench JSON), so any finished or
stopped run can be reported again later, on any machine.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tools.host_paths import public_text
from tools.run_view import ReportError, RunView

__all__ = [
    "LATENCY_METRICS",
    "PERCENTILES",
    "THROUGHPUTS",
    "ReportError",
    "RunView",
    "bench_rows",
    "failure_fates",
    "phase_timeline",
    "render_markdown",
    "scan_rows",
    "stage_rows",
]

LATENCY_METRICS = (("ttft", "TTFT"), ("tpot", "TPOT"), ("itl", "ITL"), ("e2e_latency", "E2E"))
PERCENTILES = ("mean", "median", "p90", "p95", "p99")
THROUGHPUTS = (
    ("request_throughput", "requests/s"),
    ("output_throughput", "output tok/s"),
    ("total_token_throughput", "total tok/s"),
)


def phase_timeline(events: list[dict[str, Any]]) -> list[tuple[str, float, float]]:
    """(phase, start offset s, duration s) from the `phase` events, in order."""
    marks = [(e["phase"], e["ts"]) for e in events if e.get("event") == "phase" and "ts" in e]
    ends = [e["ts"] for e in events if "ts" in e]
    if not marks:
        return []
    t0, t_end = marks[0][1], max(ends)
    out = []
    for i, (phase, ts) in enumerate(marks):
        nxt = marks[i + 1][1] if i + 1 < len(marks) else t_end
        out.append((phase, ts - t0, max(0.0, nxt - ts)))
    return out


STAGE_ORDER = ("checkout", "scan", "preflight", "unit compiles", "build", "load", "serve", "bench")


def _skipped_why(state: dict[str, Any]) -> str:
    reason = state.get("stop_reason") or ""
    if "--until" in reason:
        return reason.split("; ")[-1]
    if reason and state.get("phase"):
        return f"not reached: the run stopped at {state['phase']} (see the status line)"
    return f"not reached: {reason}" if reason else "not reached"


def stage_rows(state: dict[str, Any], events: list[dict[str, Any]]) -> list[list[str]]:
    """[stage, ran, why / result] for every stage of the loop, in order: what ran, what was skipped
    and why (a stop reason, --until, no GPU here)."""
    named = {e.get("event"): e for e in events}
    stages = state.get("stages", {})
    rows = [
        [
            "checkout",
            "ran" if state.get("base_commit") else "no",
            f"{state.get('branch', '')} from {str(state.get('base_commit', ''))[:12]}"
            if state.get("base_commit")
            else "not reached",
        ]
    ]
    if "scanned" in named:
        e = named["scanned"]
        rows.append(
            [
                "scan",
                "ran",
                f"{e.get('count', 0)} finding(s)"
                + (f": {', '.join(e.get('kinds', []))}" if e.get("kinds") else ""),
            ]
        )
    else:
        rows.append(
            [
                "scan",
                "skipped",
                next(
                    (
                        e["message"]
                        for e in events
                        if e.get("event") == "note" and "scan not run" in e.get("message", "")
                    ),
                    _skipped_why(state),
                ),
            ]
        )
    units = state.get("counters", {}).get("unit_compiles", 0)
    for name in ("preflight", "unit compiles", "build", "load", "serve", "bench"):
        if name == "unit compiles":
            every = stages.get("unit")
            if every:
                ran = "skipped" if str(every.get("status", "")).startswith("not run") else "ran"
                rows.append([name, ran, f"{every.get('status', '')}: {every.get('detail', '')}"])
            elif units:
                rows.append([name, "ran", f"{units} (hipcc/nvcc, the touched translation units)"])
            continue
        st = stages.get(name)
        if not st:
            rows.append([name, "skipped", _skipped_why(state)])
        elif name == "preflight" and st.get("checks"):
            lacking = [c["need"] for c in st["checks"] if not c["ok"]]
            rows.append(
                [
                    name,
                    "ran",
                    f"{st.get('image', '')}: "
                    + (f"missing {', '.join(lacking)}" if lacking else "has what the build needs"),
                ]
            )
        elif str(st.get("status", "")).startswith("not run"):
            rows.append(
                [name, "skipped", f"{st['status']}" + (f" ({st['detail']})" if st.get("detail") else "")]
            )
        else:
            rows.append(
                [name, "ran", f"{st.get('status', '')}" + (f": {st['detail']}" if st.get("detail") else "")]
            )
    return rows


def unit_rows(state: dict[str, Any]) -> list[list[str]]:
    """[unit, hipcc, seconds, first error] for every unit `--until unit` compiled."""
    return [
        [u["unit"], "compiles" if u["ok"] else "FAILS", f"{u.get('seconds', 0):.1f}", u.get("error", "")]
        for u in state.get("stages", {}).get("unit", {}).get("units", [])
    ]


UNIT_HEADER = ["unit", "hipcc", "s", "first error"]


def scan_rows(state: dict[str, Any], limit: int = 50) -> list[list[str]]:
    """[kind, where, construct, fix family] for the static scan's findings (the first `limit`)."""
    rows = []
    for f in state.get("scan", [])[:limit]:
        where = f"{f.get('file') or ''}:{f.get('line') or ''}".rstrip(":")
        rows.append(
            [f.get("kind", ""), where, f.get("symbol") or "", (f.get("facts") or {}).get("fix_family", "")]
        )
    return rows


def failure_fates(state: dict[str, Any]) -> list[dict[str, Any]]:
    """Every failure the run met, with what became of it: fixed, reverted, unfixable or open."""
    fates: dict[str, dict[str, Any]] = {}
    for o in state.get("outcomes", []):
        sig = o["proposal"]["failure_signature"]
        entry = fates.setdefault(sig, {"signature": sig, "fate": "", "detail": "", "proposer": ""})
        if o.get("kept"):
            entry.update(
                fate="fixed",
                detail=f"commit {str(o.get('commit') or '')[:10]}",
                proposer=o["proposal"]["proposer"],
            )
        elif entry["fate"] != "fixed":
            entry.update(fate="reverted", detail=o.get("reason", ""), proposer=o["proposal"]["proposer"])
    for u in state.get("unfixable", []):
        fates.setdefault(
            u["signature"],
            {"signature": u["signature"], "fate": "not fixed", "detail": u.get("reason", ""), "proposer": ""},
        )
    for f in state.get("failures", []):
        sig = f.get("signature", "")
        fates.setdefault(
            sig, {"signature": sig, "fate": "open", "detail": f.get("message", ""), "proposer": ""}
        )
    return list(fates.values())


def bench_rows(bench: dict[str, Any]) -> tuple[list[list[str]], list[tuple[str, float]]]:
    """Latency table rows (metric, mean..p99 in ms) and throughput pairs from a bench JSON."""
    rows = []
    for key, label in LATENCY_METRICS:
        values = [bench.get(f"{p}_{key}_ms") for p in PERCENTILES]
        if any(v is not None for v in values):
            rows.append([label] + ["—" if v is None else f"{v:.2f}" for v in values])
    thr = [(label, float(bench[key])) for key, label in THROUGHPUTS if bench.get(key) is not None]
    return rows, thr


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + [
        "| " + " | ".join(str(c).replace("|", "\\|").replace("\n", " ") for c in r) + " |" for r in rows
    ]


def render_markdown(view: RunView) -> str:
    s = view.state
    c = s.get("counters", {})
    cost = c.get("cost_usd")
    lines = [
        f"# rocport run {view.run_id}",
        "",
        f"**Status:** {s.get('status', '?')} — {s.get('stop_reason', '')}",
        "",
        f"Work branch `{s.get('branch', '')}` from `{str(s.get('base_commit', ''))[:12]}`.",
        "",
        "## Timeline",
        "",
    ]
    lines += _table(
        ["phase", "at (s)", "took (s)"],
        [[p, f"{t:.1f}", f"{d:.1f}"] for p, t, d in phase_timeline(view.events)],
    ) or ["(no events)"]
    lines += ["", "## Stages", ""]
    lines += _table(["stage", "ran", "why / result"], stage_rows(s, view.events))
    pre = s.get("stages", {}).get("preflight", {})
    if pre.get("checks"):
        lines += ["", f"### Preflight of `{pre.get('image', '')}`", ""]
        lines += _table(
            ["needs", "ok", "found", "for"],
            [[c["need"], "yes" if c["ok"] else "**NO**", c["found"], c["why"]] for c in pre["checks"]],
        )
    if unit_rows(s):
        lines += ["", f"### Unit compiles ({s['stages']['unit'].get('detail', '')})", ""]
        lines += _table(UNIT_HEADER, unit_rows(s))
    findings = s.get("scan", [])
    lines += ["", f"## Static scan ({len(findings)} finding(s))", ""]
    lines += _table(["kind", "where", "construct", "fix family"], scan_rows(s)) if findings else ["(none)"]
    if len(findings) > 50:
        lines += ["", f"... and {len(findings) - 50} more (state.json holds them all)"]
    lines += ["", "## Failures and their fate", ""]
    lines += _table(
        ["failure", "fate", "by", "detail"],
        [[f"`{f['signature']}`", f["fate"], f["proposer"], f["detail"]] for f in failure_fates(s)],
    )
    lines += ["", "## Patches", ""]
    for i, o in enumerate(s.get("outcomes", []), 1):
        p = o["proposal"]
        verdict = "kept" if o.get("kept") else f"reverted: {o.get('reason', '')}"
        lines += [
            f"### {i}. {p['proposer']} — {', '.join(p.get('files', []))} ({verdict})",
            "",
            p.get("rationale", ""),
            "",
        ]
        lines += _table(
            ["check", "ok", "detail"],
            [
                [ck["name"], "yes" if ck["ok"] else "no", ck.get("detail", "")[:160]]
                for ck in o.get("checks", [])
            ],
        )
        lines.append("")
    lines += ["## Costs", ""]
    lines += _table(
        ["what", "count"],
        [
            ["full builds", c.get("builds", 0)],
            ["unit compiles", c.get("unit_compiles", 0)],
            ["server launches", c.get("launches", 0)],
            ["LLM calls", c.get("llm_calls", 0)],
            ["LLM tokens (in/out)", f"{c.get('tokens_in', 0)}/{c.get('tokens_out', 0)}"],
            ["LLM cost", "unknown (no pricing configured)" if cost is None else f"${cost:.4f}"],
            ["wall time (s)", f"{s.get('elapsed_s', 0):.1f}"],
        ],
    )
    bench = s.get("bench")
    if bench:
        rows, thr = bench_rows(bench)
        lines += ["", "## Benchmark", ""]
        if bench.get("command"):
            lines += [f"Command: `{bench['command']}`", ""]
        lines += [*_table(["metric (ms)", *PERCENTILES], rows), ""]
        lines += _table(["throughput", "value"], [[k, f"{v:.2f}"] for k, v in thr])
        if bench.get("invalid_reasons"):
            lines += ["", f"**INVALID:** {'; '.join(bench['invalid_reasons'])}"]
    lines += _tune_markdown(view.path)
    return public_text("\n".join(lines) + "\n", view)


def _tune_markdown(run_dir: Path) -> list[str]:
    from tools.tune.sections import report_markdown  # the tune section, when the run was tuned

    return report_markdown(run_dir)
