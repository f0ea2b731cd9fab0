"""BenchResult: what a benchmark measured, whether it is valid, and its JSON.

The JSON carries our canonical keys plus, at the top level, the field names of sglang's
`bench_serving` and `vllm bench serve`, so a result file compares side by side with theirs.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

SCHEMA = "rocport.bench/1"
HIT_RATE_TOLERANCE = 0.02
OUTPUT_MISMATCH_LIMIT = 0.01

# Every tok/s figure says which kind it is.
THROUGHPUT_KINDS = {
    "requests_per_s": "completed requests per second of the measured window",
    "output_tokens_per_s": "generated tokens (usage.completion_tokens) per second, all streams together",
    "input_tokens_per_s": "prompt tokens (usage.prompt_tokens) per second, cached ones included",
    "total_tokens_per_s": "prompt + generated tokens per second",
    "uncached_input_tokens_per_s": "prompt tokens the server had to prefill (prompt - cached) per second",
    "output_tokens_per_s_per_stream": "median per-request decode speed: (output - 1) / (E2E - TTFT)",
    "peak_output_tokens_per_s": "most generated tokens that arrived within one second of the window",
    "single_stream.output_tokens_per_s": "concurrency 1: generated tokens / summed request time (TTFT included)",
    "single_stream.decode_tokens_per_s": "concurrency 1: 1 / median TPOT",
}


@dataclass
class BenchResult:
    """One benchmark run: the canonical record `rocport bench` writes and `bench compare` reads."""

    workload: dict[str, Any]
    config: dict[str, Any]
    counts: dict[str, Any]
    duration_s: float
    throughput: dict[str, Any]
    latency_ms: dict[str, Any]
    tokens_per_chunk: dict[str, Any]
    cache: dict[str, Any]
    goodput: dict[str, Any]
    concurrency: dict[str, Any]
    failures: list[dict[str, Any]]
    single_stream: dict[str, Any] | None = None
    valid: bool = True
    invalid_reasons: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    per_request: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        data = {"schema": SCHEMA, **asdict(self), "throughput_kinds": THROUGHPUT_KINDS}
        data.update(sglang_fields(self))
        data.update(vllm_fields(self))
        return data

    def write(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_json(), indent=2) + "\n")


def apply_gates(r: BenchResult, max_failure_rate: float = 0.0) -> BenchResult:
    """Mark the result INVALID, with reasons, when failures, output lengths or hit rate are off."""
    reasons, warnings = [], []
    c = r.counts
    if c["completed"] == 0:
        reasons.append(f"no request completed ({c['failed']} failed)")
    fail_rate = c["failed"] / c["requests"] if c["requests"] else 0.0
    if c["failed"] and fail_rate > max_failure_rate:
        top = r.failures[0]["error"] if r.failures else "unknown"
        reasons.append(
            f"{c['failed']} of {c['requests']} requests failed ({fail_rate:.1%} > "
            f"{max_failure_rate:.1%} allowed); most common: {top}"
        )
    if c["completed"]:
        mism = c["output_length_mismatches"] / c["completed"]
        if mism > OUTPUT_MISMATCH_LIMIT:
            reasons.append(
                f"output length differs from the requested OSL in {mism:.1%} of requests "
                f"({c['output_tokens']} tokens generated vs {c['output_tokens_requested']} requested); "
                "the server may ignore ignore_eos/min_tokens"
            )
        if c["requests_without_usage"]:
            warnings.append(
                f"{c['requests_without_usage']} requests ended without a usage block; their "
                "output lengths were counted from stream chunks"
            )
        if c["input_length_mismatches"]:
            warnings.append(
                f"usage.prompt_tokens differs from the requested ISL in {c['input_length_mismatches']} "
                "requests (chat templates or an added BOS token do this)"
            )
    if c.get("requests_resent"):
        warnings.append(
            f"{c['requests_resent']} requests were sent again after the server closed their "
            "connection without answering"
        )
    _hit_gate(r, reasons, warnings)
    r.invalid_reasons, r.warnings = reasons, warnings
    r.valid = not reasons
    return r


def _hit_gate(r: BenchResult, reasons: list[str], warnings: list[str]) -> None:
    target = r.workload.get("expected_hit_rate", 0.0)
    hit = r.cache.get("hit_rate")
    if r.counts["completed"] == 0:
        return
    if hit is None:
        if target > 0:
            reasons.append(
                f"cache hit rate not measurable: the server reported no "
                f"usage.prompt_tokens_details.cached_tokens (target {target:.1%}); enable it "
                "(sglang --enable-cache-report, vllm --enable-prompt-tokens-details)"
            )
        return
    if abs(hit - target) > HIT_RATE_TOLERANCE:
        reasons.append(
            f"cache hit rate {hit:.1%} is off the target {target:.1%} by more than "
            f"{HIT_RATE_TOLERANCE * 100:.0f} points"
        )
    if r.cache["requests_reporting"] < r.counts["completed"]:
        warnings.append(
            f"only {r.cache['requests_reporting']} of {r.counts['completed']} requests reported cached tokens"
        )


def _stat(r: BenchResult, metric: str, key: str) -> float | None:
    s = r.latency_ms.get(metric)
    value: float | None = s[key] if s else None
    return value


def _latency_fields(r: BenchResult, names: dict[str, str], extra_max: tuple[str, ...] = ()) -> dict[str, Any]:
    out = {}
    for ours, theirs in names.items():
        for key in ("mean", "median", "std", "p90", "p95", "p99"):
            out[f"{key}_{theirs}_ms"] = _stat(r, ours, key)
        if theirs in extra_max:
            out[f"max_{theirs}_ms"] = _stat(r, ours, "max")
    return out


def sglang_fields(r: BenchResult) -> dict[str, Any]:
    """The result keys of sglang's bench_serving (python -m sglang.bench_serving)."""
    w, c, t = r.workload, r.counts, r.throughput
    rate = r.config.get("request_rate")
    return {
        "backend": "rocport",
        "dataset_name": "generated-shared-prefix" if w.get("prefix_len") else "random-ids",
        "request_rate": rate,
        "max_concurrency": r.config.get("max_concurrency"),
        "random_input_len": w.get("isl"),
        "random_output_len": w.get("osl"),
        "random_range_ratio": 1.0,
        "duration": r.duration_s,
        "completed": c["completed"],
        "total_input_tokens": c["input_tokens"],
        "total_output_tokens": c["output_tokens"],
        "request_throughput": t["requests_per_s"],
        "input_throughput": t["input_tokens_per_s"],
        "output_throughput": t["output_tokens_per_s"],
        "total_throughput": t["total_tokens_per_s"],
        "concurrency": r.concurrency.get("mean"),
        **_latency_fields(r, {"e2e": "e2e_latency", "ttft": "ttft", "tpot": "tpot", "itl": "itl"}, ("itl",)),
        "max_output_tokens_per_s": t.get("peak_output_tokens_per_s"),
        "max_concurrent_requests": r.concurrency.get("peak"),
    }


def vllm_fields(r: BenchResult) -> dict[str, Any]:
    """The result keys of `vllm bench serve` (benchmarks/benchmark_serving.py)."""
    c, t, pr = r.counts, r.throughput, r.per_request
    return {
        "duration": r.duration_s,
        "completed": c["completed"],
        "failed": c["failed"],
        "total_input_tokens": c["input_tokens"],
        "total_output_tokens": c["output_tokens"],
        "request_throughput": t["requests_per_s"],
        "request_goodput": r.goodput.get("requests_per_s"),
        "output_throughput": t["output_tokens_per_s"],
        "total_token_throughput": t["total_tokens_per_s"],
        **_latency_fields(r, {"ttft": "ttft", "tpot": "tpot", "itl": "itl", "e2e": "e2el"}),
        "input_lens": pr.get("input_lens", []),
        "output_lens": pr.get("output_lens", []),
        "ttfts": pr.get("ttfts", []),
        "latencies": pr.get("latencies", []),
        "errors": [f["error"] for f in r.failures],
        "max_output_tokens_per_s": t.get("peak_output_tokens_per_s"),
        "max_concurrent_requests": r.concurrency.get("peak"),
    }


def load_result(path: Path) -> dict[str, Any]:
    """A result file as a dict: ours, or a sglang/vllm one (compare reads their keys too)."""
    try:
        text = Path(path).read_text()
        # sglang appends one JSON object per run to a .jsonl file: the last one is the newest.
        lines = [ln for ln in text.splitlines() if ln.strip()]
        data = json.loads(lines[-1] if str(path).endswith(".jsonl") else text)
    except FileNotFoundError:
        raise ValueError(f"result file {path} does not exist") from None
    except (ValueError, IndexError) as exc:
        raise ValueError(f"result file {path} is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError(f"result file {path} does not hold a JSON object")
    return data
