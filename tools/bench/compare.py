"""Compare two benchmark results (before/after, AMD vs reference) metric by metric.

Reads our files and sglang/vllm result files alike through the shared top-level keys.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


def _first(d: dict[str, Any], *keys: str) -> float | None:
    for k in keys:
        v = d.get(k)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return float(v)
    return None


def _nested(d: Any, *path: str) -> float | None:
    for p in path:
        if not isinstance(d, dict):
            return None
        d = d.get(p)
    return float(d) if isinstance(d, (int, float)) and not isinstance(d, bool) else None


# (label, higher_is_better, getter)
METRICS: list[tuple[str, bool, Callable[[dict[str, Any]], float | None]]] = [
    ("Requests/s", True, lambda d: _first(d, "request_throughput")),
    ("Output tok/s (generated, all streams)", True, lambda d: _first(d, "output_throughput")),
    (
        "Total tok/s (prompt + generated)",
        True,
        lambda d: _first(d, "total_token_throughput", "total_throughput"),
    ),
    (
        "Uncached input tok/s (prefilled)",
        True,
        lambda d: _nested(d, "throughput", "uncached_input_tokens_per_s"),
    ),
    (
        "Output tok/s per stream (decode)",
        True,
        lambda d: _nested(d, "throughput", "output_tokens_per_s_per_stream"),
    ),
    ("Goodput (req/s within SLOs)", True, lambda d: _first(d, "request_goodput")),
    ("Cache hit rate", True, lambda d: _nested(d, "cache", "hit_rate")),
    ("Mean TTFT (ms)", False, lambda d: _first(d, "mean_ttft_ms")),
    ("Median TTFT (ms)", False, lambda d: _first(d, "median_ttft_ms")),
    ("P99 TTFT (ms)", False, lambda d: _first(d, "p99_ttft_ms")),
    ("Mean TPOT (ms)", False, lambda d: _first(d, "mean_tpot_ms")),
    ("Median TPOT (ms)", False, lambda d: _first(d, "median_tpot_ms")),
    ("P99 TPOT (ms)", False, lambda d: _first(d, "p99_tpot_ms")),
    ("Median ITL (ms)", False, lambda d: _first(d, "median_itl_ms")),
    ("P99 ITL (ms)", False, lambda d: _first(d, "p99_itl_ms")),
    ("Median ITL per token (ms)", False, lambda d: _nested(d, "latency_ms", "itl_per_token", "median")),
    ("Median E2E (ms)", False, lambda d: _first(d, "median_e2e_latency_ms", "median_e2el_ms")),
    ("P99 E2E (ms)", False, lambda d: _first(d, "p99_e2e_latency_ms", "p99_e2el_ms")),
    ("Single-stream output tok/s", True, lambda d: _nested(d, "single_stream", "output_tokens_per_s")),
]


@dataclass
class MetricDelta:
    """One row of a comparison."""

    metric: str
    a: float | None
    b: float | None
    delta_pct: float | None
    """(b - a) / a in percent."""
    better: str | None
    """"B" when B is better, "A" when A is, "same" within 0.5%, None when not comparable."""
    higher_is_better: bool


def compare_results(a: dict[str, Any], b: dict[str, Any]) -> list[MetricDelta]:
    """Rows for every metric present in both results, with percentage deltas and which is better."""
    rows = []
    for label, higher, get in METRICS:
        va, vb = get(a), get(b)
        if va is None and vb is None:
            continue
        delta = better = None
        if va is not None and vb is not None:
            if va != 0:
                delta = (vb - va) / abs(va) * 100.0
            if delta is not None and abs(delta) < 0.5:
                better = "same"
            elif vb != va:
                better = "B" if (vb > va) == higher else "A"
            else:
                better = "same"
        rows.append(MetricDelta(label, va, vb, delta, better, higher))
    return rows


def validity(d: dict[str, Any]) -> str:
    """VALID / INVALID (reasons) for our files, "unknown" for files of other tools."""
    if "valid" not in d:
        return "unknown (not a rocport result)"
    return "VALID" if d["valid"] else "INVALID: " + "; ".join(d.get("invalid_reasons", []))
