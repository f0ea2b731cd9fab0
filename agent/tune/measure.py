"""One candidate's numbers: the job's workload run `repeats` times against a running server, each
time with fresh prompts (fresh prefixes, primed again), and the median of the repeats kept, so one
window disturbed by a straggler or a busy machine does not decide the search."""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field, replace
from pathlib import Path

from tools.bench import BenchConfig, Workload, run_bench

SEED_STRIDE = 100
"""Seeds of successive repeats differ by this: no repeat meets another's prompts in the cache."""


@dataclass
class Measurement:
    """Medians over the repeats, and each repeat's output tok/s (the spread a reader can judge)."""

    output_tok_s: float
    total_tok_s: float
    ttft_ms: float | None
    tpot_ms: float | None
    valid: bool
    reasons: list[str] = field(default_factory=list)
    repeats: list[float] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)


def _median_latency(results: list[dict], metric: str) -> float | None:
    values = [r["latency_ms"][metric]["median"] for r in results if r["latency_ms"].get(metric)]
    return round(statistics.median(values), 2) if values else None


def measure(
    base_url: str,
    model: str,
    workload: Workload,
    concurrency: int,
    repeats: int = 3,
    *,
    out_dir: Path | None = None,
    name: str = "bench",
    slo_ttft_ms: float | None = None,
    slo_tpot_ms: float | None = None,
) -> Measurement:
    """Run the workload `repeats` times; raw JSON of each kept as out_dir/name-rN.json."""
    results, paths = [], []
    for i in range(repeats):
        cfg = BenchConfig(
            base_url=base_url,
            model=model,
            workload=replace(workload, seed=workload.seed + i * SEED_STRIDE),
            max_concurrency=concurrency,
            slo_ttft_ms=slo_ttft_ms,
            slo_tpot_ms=slo_tpot_ms,
            timeout_s=600,
        )
        result = run_bench(cfg).to_json()
        results.append(result)
        if out_dir is not None:
            path = out_dir / f"{name}-r{i + 1}.json"
            path.write_text(json.dumps(result, indent=2, default=str))
            paths.append(str(path))
    outputs = [r["throughput"]["output_tokens_per_s"] for r in results]
    return Measurement(
        output_tok_s=round(statistics.median(outputs), 2),
        total_tok_s=round(statistics.median(r["throughput"]["total_tokens_per_s"] for r in results), 2),
        ttft_ms=_median_latency(results, "ttft"),
        tpot_ms=_median_latency(results, "tpot"),
        valid=all(r.get("valid", True) for r in results),
        reasons=sorted({reason for r in results for reason in r.get("invalid_reasons", [])}),
        repeats=[round(x, 2) for x in outputs],
        paths=paths,
    )
