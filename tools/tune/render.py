"""The tune results as markdown: the search side by side with exhaustive, the Pareto table with
per-node, per-GPU and $/Mtok figures, reference rows, the chosen launch and its snippets."""

from __future__ import annotations

from typing import Any

from tools.tune.records import Search, Trial
from tools.tune.results import TuneOutcome, pareto


def _num(value: float | None, fmt: str = ",.0f") -> str:
    return "–" if value is None else format(value, fmt)


def _usd(value: float | None) -> str:
    return "–" if value is None else f"${value:,.3f}"


def comparison_lines(outcome: TuneOutcome) -> list[str]:
    """The search next to the exhaustive grid (when it was run): launches, best, its throughput."""
    rows = [outcome.search] + ([outcome.exhaustive] if outcome.exhaustive else [])
    lines = [
        "| search | launches | candidates | stopped early | wall s | best | output tok/s |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in rows:
        best = s.best_trial()
        stopped = sum(1 for t in s.trials if t.status == "stopped early")
        lines.append(
            f"| {s.strategy} | {s.launches} | {s.grid_size} | {stopped} | {s.wall_s:.0f} | "
            f"{best.key if best else '–'} | {_num(best.output_tok_s if best else None)} |"
        )
    return lines


def trial_table(outcome: TuneOutcome, search: Search) -> list[str]:
    """One row per trial plus the reference rows."""
    front = {t.key for t in pareto(search.trials)}
    lines = [
        "| configuration | status | output tok/s per node | per GPU | TTFT p50 ms | TPOT p50 ms | $/Mtok | Pareto |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for t in sorted(search.trials, key=lambda t: -(t.output_tok_s or 0)):
        mark = "chosen" if t.key == search.best else ("yes" if t.key in front else "")
        status = t.status + (f" ({t.reason})" if t.reason and t.status != "measured" else "")
        if t.measured and not t.meets_slo:
            status += " (misses SLO)"
        per_gpu = t.output_tok_s / t.gpus if t.output_tok_s else None
        lines.append(
            f"| `{t.key}` | {status} | {_num(t.output_tok_s)} | {_num(per_gpu, ',.1f')} | "
            f"{_num(t.ttft_ms, ',.1f')} | {_num(t.tpot_ms, ',.1f')} | {_usd(outcome.usd_per_mtok(t))} | {mark} |"
        )
    lines.extend(
        f"| {ref.name} (reference, {ref.gpus} GPUs) | published | {_num(ref.tok_s_per_node)} | "
        f"{_num(ref.tok_s_per_node / ref.gpus, ',.1f')} | – | – | {_usd(ref.usd_per_mtok)} | |"
        for ref in outcome.references
    )
    return lines


def chosen_lines(outcome: TuneOutcome, best: Trial) -> list[str]:
    lines = [
        "Chosen configuration, as a launch command:",
        "",
        "```bash",
        outcome.chosen_command,
        "```",
        "",
        "As a job snippet (`rocport port -c job.yaml -c tune.yaml`):",
        "",
        "```yaml",
        outcome.job_snippet,
        "```",
    ]
    if outcome.profile_snippet:
        lines += ["", "Environment for the profile's `env:`:", "", "```yaml", outcome.profile_snippet, "```"]
    if outcome.verify and outcome.rerun_delta is not None:
        lines += [
            "",
            (
                f"Rerun of the chosen launch with the same load: {_num(outcome.verify.output_tok_s)} output "
                f"tok/s against {_num(best.output_tok_s)} in the search ({outcome.rerun_delta:+.1%})."
            ),
        ]
    return lines


def moe_lines(moe: dict[str, Any]) -> list[str]:
    lines = [f"MoE kernel configs: `{moe['command']}`"]
    if moe.get("commit"):
        lines.append(f"committed {moe['commit'][:12]} ({', '.join(moe['files'])}); log `{moe['log']}`")
    else:
        lines.append(f"not committed: {moe.get('reason', 'no config written')}")
    lines += [f"- {row}" for row in moe.get("evidence", [])]
    return lines


def markdown(outcome: TuneOutcome, plot_name: str | None = "tune.svg", heading: str = "##") -> str:
    """The whole tune section (report, PR description, `rocport tune` output file)."""
    wl = outcome.workload
    lines = [
        f"{heading} Serving configuration (rocport tune)",
        "",
        f"Workload: ISL {wl['isl']}, OSL {wl['osl']}, {wl['num_prompts']} prompts, prefix hit "
        f"{wl['prefix_hit']:.0%}, concurrency {wl.get('max_concurrency', '?')}; {outcome.gpus} GPUs per node"
        + (
            f"; price ${outcome.price_per_gpu_hour}/GPU-hour"
            if outcome.price_per_gpu_hour is not None
            else ""
        )
        + (f"; SLO TTFT {outcome.slo_ttft_ms} ms" if outcome.slo_ttft_ms else "")
        + (f"; SLO TPOT {outcome.slo_tpot_ms} ms" if outcome.slo_tpot_ms else "")
        + ".",
        "",
    ]
    lines += [*comparison_lines(outcome), "", *trial_table(outcome, outcome.search), ""]
    if outcome.exhaustive:
        lines += ["Every candidate (the exhaustive grid, full measurement each):", ""]
        lines += [*trial_table(outcome, outcome.exhaustive), ""]
    if plot_name:
        lines += [f"![throughput against TTFT]({plot_name})", ""]
    best = outcome.best
    if best:
        lines += [*chosen_lines(outcome, best), ""]
    else:
        lines += ["No candidate was measured: see the status column.", ""]
    if outcome.moe:
        lines += [*moe_lines(outcome.moe), ""]
    return "\n".join(lines)
