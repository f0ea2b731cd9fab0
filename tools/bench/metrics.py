"""Serving metrics from request records, with the definitions sglang bench_serving and vllm bench serve use.

- TTFT: first token-bearing read minus the moment the request was written to the socket.
- E2E: end of the response body minus the same start.
- TPOT: (E2E - TTFT) / (output_tokens - 1), output_tokens from usage.completion_tokens.
- ITL: gaps between consecutive content chunks (events of one read arrive together: gap 0).
- ITL per token: each gap divided over the tokens that chunk carried, one sample per token, so
  multi-token chunks (MTP / speculative decoding) do not make ITL look slower than TPOT.
Statistics use numpy (linear-interpolated percentiles), like both reference tools.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tools.bench.client import RequestRecord

PERCENTILES = (90, 95, 99)


def stats_ms(values_s: Sequence[float]) -> dict[str, Any] | None:
    """mean/median/std/p90/p95/p99/min/max in milliseconds of values given in seconds."""
    if len(values_s) == 0:
        return None
    a = np.asarray(values_s, dtype=float) * 1000.0
    out = {"mean": float(a.mean()), "median": float(np.median(a)), "std": float(a.std())}
    for p in PERCENTILES:
        out[f"p{p}"] = float(np.percentile(a, p))
    out.update(min=float(a.min()), max=float(a.max()), count=int(a.size))
    return out


@dataclass
class RequestMetrics:
    """Per-request numbers of one successful request."""

    ttft: float
    e2e: float
    tpot: float | None
    output_tokens: int
    prompt_tokens: int
    cached_tokens: int | None
    chunks: int
    usage_reported: bool
    itl: list[float] = field(default_factory=list)
    itl_per_token: list[float] = field(default_factory=list)


def _itls(rec: RequestRecord, out_tokens: int) -> tuple[list[float], list[float]]:
    itl: list[float] = [0.0] * (rec.chunks[0] - 1)
    per_tok: list[float] = []
    # Without per-chunk usage, each event counted as one token; spread the usage total over the gaps.
    later = sum(rec.tokens[1:])
    scale = 1.0
    if not rec.tokens_exact and later and out_tokens > rec.tokens[0]:
        scale = (out_tokens - rec.tokens[0]) / later
    prev = rec.arrivals[0]
    for t, c, k in zip(rec.arrivals[1:], rec.chunks[1:], rec.tokens[1:], strict=True):
        gap = t - prev
        prev = t
        itl.append(gap)
        if c > 1:
            itl.extend([0.0] * (c - 1))
        n = k * scale
        per_tok.extend([gap / n] * max(1, round(n)))
    return itl, per_tok


def _int_or(value: object, fallback: int) -> int:
    return value if isinstance(value, int) else fallback


def request_metrics(rec: RequestRecord) -> RequestMetrics:
    """Metrics of one successful request."""
    usage = rec.usage or {}
    counted = sum(rec.tokens)
    out_tokens = _int_or(usage.get("completion_tokens"), counted)
    prompt = _int_or(usage.get("prompt_tokens"), rec.isl)
    details = usage.get("prompt_tokens_details") or {}
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    ttft, e2e = rec.first - rec.start, rec.end - rec.start
    tpot = (e2e - ttft) / (out_tokens - 1) if out_tokens > 1 else None
    itl, per_tok = _itls(rec, out_tokens)
    return RequestMetrics(
        ttft,
        e2e,
        tpot,
        out_tokens,
        prompt,
        cached if isinstance(cached, int) else None,
        sum(rec.chunks),
        bool(rec.usage),
        itl,
        per_tok,
    )


def _peak_output_rate(records: list[RequestRecord], start: float) -> float:
    """Most output tokens that arrived within one 1-second bucket of the window (vllm's definition)."""
    times = [t for r in records for t in r.arrivals]
    if not times:
        return 0.0
    weights = [k for r in records for k in r.tokens]
    buckets = np.floor(np.asarray(times) - start).astype(int).clip(min=0)
    return float(np.bincount(buckets, weights=weights).max())


def _peak_concurrency(records: list[RequestRecord]) -> int:
    events = sorted([(r.start, 1) for r in records] + [(r.end, -1) for r in records])
    peak = cur = 0
    for _, d in events:
        cur += d
        peak = max(peak, cur)
    return peak


def error_summary(records: list[RequestRecord], limit: int = 10) -> list[dict[str, Any]]:
    """Distinct errors with their counts, most frequent first."""
    counts = Counter(r.error or "unknown error" for r in records if not r.ok)
    return [{"error": e, "count": n} for e, n in counts.most_common(limit)]


def compute(
    records: list[RequestRecord],
    start: float,
    end: float,
    slo_ttft_ms: float | None = None,
    slo_tpot_ms: float | None = None,
) -> dict[str, Any]:
    """Window-level metrics of the measured requests: counts, rates, latency stats, cache, goodput."""
    ok = [r for r in records if r.ok]
    per = [request_metrics(r) for r in ok]
    dur = max(end - start, 1e-9)
    out_tok = sum(m.output_tokens for m in per)
    in_tok = sum(m.prompt_tokens for m in per)
    reporting = [m for m in per if m.cached_tokens is not None]
    cached = sum(m.cached_tokens or 0 for m in reporting)  # all reporting: None filtered out above
    reported_prompt = sum(m.prompt_tokens for m in reporting)
    hit = cached / reported_prompt if reported_prompt else None
    uncached = in_tok - cached if reporting and len(reporting) == len(per) else None
    good = [
        m
        for m in per
        if (slo_ttft_ms is None or m.ttft * 1000 <= slo_ttft_ms)
        and (slo_tpot_ms is None or (m.tpot or 0.0) * 1000 <= slo_tpot_ms)
    ]
    chunks = sum(m.chunks for m in per)
    decode_rates = [
        (m.output_tokens - 1) / (m.e2e - m.ttft) for m in per if m.output_tokens > 1 and m.e2e > m.ttft
    ]
    return {
        "counts": {
            "requests": len(records),
            "completed": len(ok),
            "failed": len(records) - len(ok),
            "input_tokens": in_tok,
            "output_tokens": out_tok,
            "chunks": chunks,
            "requests_resent": sum(1 for r in records if r.resent),
            "requests_without_usage": sum(1 for m in per if not m.usage_reported),
            "output_tokens_requested": sum(r.osl for r in ok),
            "output_length_mismatches": sum(
                1 for m, r in zip(per, ok, strict=True) if m.output_tokens != r.osl
            ),
            "input_length_mismatches": sum(
                1 for m, r in zip(per, ok, strict=True) if m.prompt_tokens != r.isl
            ),
        },
        "duration_s": dur,
        "throughput": {
            "requests_per_s": len(ok) / dur,
            "output_tokens_per_s": out_tok / dur,
            "input_tokens_per_s": in_tok / dur,
            "total_tokens_per_s": (in_tok + out_tok) / dur,
            "uncached_input_tokens_per_s": uncached / dur if uncached is not None else None,
            "output_tokens_per_s_per_stream": float(np.median(decode_rates)) if decode_rates else None,
            "peak_output_tokens_per_s": _peak_output_rate(ok, start),
        },
        "latency_ms": {
            "ttft": stats_ms([m.ttft for m in per]),
            "tpot": stats_ms([m.tpot for m in per if m.tpot is not None]),
            "itl": stats_ms([x for m in per for x in m.itl]),
            "itl_per_token": stats_ms([x for m in per for x in m.itl_per_token]),
            "e2e": stats_ms([m.e2e for m in per]),
        },
        "tokens_per_chunk": {
            "mean": out_tok / chunks if chunks else None,
            "source": "usage" if all(r.tokens_exact for r in ok) else "estimated",
        },
        "cache": {
            "hit_rate": hit,
            "cached_tokens": cached,
            "prompt_tokens_reporting": reported_prompt,
            "requests_reporting": len(reporting),
        },
        "goodput": {
            "slo_ttft_ms": slo_ttft_ms,
            "slo_tpot_ms": slo_tpot_ms,
            "requests_per_s": len(good) / dur if (slo_ttft_ms or slo_tpot_ms) else None,
            "fraction": len(good) / len(records) if (slo_ttft_ms or slo_tpot_ms) and records else None,
        },
        "concurrency": {"mean": sum(m.e2e for m in per) / dur, "peak": _peak_concurrency(ok)},
        "failures": error_summary(records),
        "per_request": {
            "input_lens": [m.prompt_tokens for m in per],
            "output_lens": [m.output_tokens for m in per],
            "ttfts": [m.ttft for m in per],
            "latencies": [m.e2e for m in per],
        },
    }


def single_stream(records: list[RequestRecord], window: tuple[float, float]) -> dict[str, Any] | None:
    """Single-stream figures at concurrency 1: output tok/s of the phase, and decode tok/s (1/TPOT)."""
    ok = [r for r in records if r.ok]
    if not ok:
        return (
            {
                "requests": len(records),
                "completed": 0,
                "output_tokens_per_s": None,
                "decode_tokens_per_s": None,
                "median_ttft_ms": None,
            }
            if records
            else None
        )
    per = [request_metrics(r) for r in ok]
    busy = sum(m.e2e for m in per)
    tpots = [m.tpot for m in per if m.tpot]
    return {
        "requests": len(records),
        "completed": len(ok),
        "output_tokens_per_s": sum(m.output_tokens for m in per) / busy,
        "decode_tokens_per_s": 1.0 / float(np.median(tpots)) if tpots else None,
        "median_ttft_ms": float(np.median([m.ttft for m in per])) * 1000,
    }
