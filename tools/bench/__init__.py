"""The serving benchmark: workloads, the streaming client, metrics, results and comparisons."""

from __future__ import annotations

from tools.bench.compare import compare_results
from tools.bench.metrics import compute, single_stream
from tools.bench.plan import build_plan
from tools.bench.result import BenchResult, apply_gates, load_result
from tools.bench.runner import (
    BenchConfig,
    BenchConfigError,
    BenchRun,
    request_timeout,
    run_async,
    run_benchmark,
)
from tools.bench.workload import PRESETS, Workload, WorkloadError, preset


def result_from_run(run: BenchRun, cfg: BenchConfig) -> BenchResult:
    """Turn raw records into a gated BenchResult."""
    m = compute(run.measured, run.window_start, run.window_end, cfg.slo_ttft_ms, cfg.slo_tpot_ms)
    single = single_stream(run.single, run.single_window) if run.single and run.single_window else None
    if single is None and cfg.max_concurrency == 1:
        single = single_stream(run.measured, (run.window_start, run.window_end))
    warm_failed = sum(1 for r in run.warmup if not r.ok)
    result = BenchResult(workload=cfg.workload.to_dict(), config=cfg.to_dict(), single_stream=single, **m)
    result.counts["warmup_requests"] = len(run.warmup)
    apply_gates(result, cfg.max_failure_rate)
    if warm_failed:
        result.warnings.append(
            f"{warm_failed} of {len(run.warmup)} warmup requests failed; prefixes may not have been primed"
        )
    return result


def run_bench(cfg: BenchConfig) -> BenchResult:
    """Run the benchmark described by cfg and return its gated result."""
    return result_from_run(run_async(run_benchmark(cfg)), cfg)


__all__ = [
    "PRESETS",
    "BenchConfig",
    "BenchConfigError",
    "BenchResult",
    "BenchRun",
    "Workload",
    "WorkloadError",
    "apply_gates",
    "build_plan",
    "compare_results",
    "load_result",
    "preset",
    "request_timeout",
    "result_from_run",
    "run_bench",
    "run_benchmark",
]
