"""Metric definitions on hand-built request records (sglang/vllm definitions, plus per-token ITL)."""

from __future__ import annotations

import numpy as np
import pytest

from tools.bench.client import RequestRecord
from tools.bench.metrics import compute, request_metrics, stats_ms


def _rec(start, reads, usage_out, exact=True, isl=100, cached=None, osl=None):
    """reads: [(time, chunks, tokens)]."""
    r = RequestRecord("r", "measured", isl, osl or usage_out, 0, start=start, ok=True, tokens_exact=exact)
    for t, c, k in reads:
        r.arrivals.append(t)
        r.chunks.append(c)
        r.tokens.append(k)
    r.first, r.end = reads[0][0], reads[-1][0]
    r.usage = {"prompt_tokens": isl, "completion_tokens": usage_out}
    if cached is not None:
        r.usage["prompt_tokens_details"] = {"cached_tokens": cached}
    return r


def test_ttft_tpot_e2e_and_itl_follow_the_reference_definitions():
    rec = _rec(10.0, [(10.1, 1, 1), (10.12, 1, 1), (10.15, 1, 1), (10.16, 1, 1)], 4)
    m = request_metrics(rec)
    assert m.ttft == pytest.approx(0.1) and m.e2e == pytest.approx(0.16)
    assert m.tpot == pytest.approx((0.16 - 0.1) / 3)
    assert m.itl == pytest.approx([0.02, 0.03, 0.01])


def test_multi_token_chunks_spread_their_gap_over_their_tokens():
    # MTP: 1 token first, then chunks of 3 tokens every 30 ms.
    rec = _rec(0.0, [(0.05, 1, 1), (0.08, 1, 3), (0.11, 1, 3)], 7)
    m = request_metrics(rec)
    assert m.itl == pytest.approx([0.03, 0.03])
    assert m.itl_per_token == pytest.approx([0.01] * 6)
    assert m.tpot == pytest.approx(0.06 / 6)


def test_events_sharing_a_read_are_zero_gap_chunks():
    rec = _rec(0.0, [(0.05, 2, 2), (0.07, 3, 3)], 5)
    m = request_metrics(rec)
    assert m.itl == pytest.approx([0.0, 0.02, 0.0, 0.0])


def test_without_per_chunk_usage_the_usage_total_is_spread_over_the_chunks():
    rec = _rec(0.0, [(0.05, 1, 1), (0.08, 1, 1), (0.11, 1, 1)], 5, exact=False)
    m = request_metrics(rec)
    assert m.output_tokens == 5
    assert np.mean(m.itl_per_token) == pytest.approx(0.015)


def test_stats_use_numpy_percentiles():
    vals = [0.001 * i for i in range(1, 101)]
    s = stats_ms(vals)
    assert s["p99"] == pytest.approx(np.percentile(np.arange(1, 101), 99))
    assert s["median"] == pytest.approx(50.5) and s["std"] == pytest.approx(np.std(np.arange(1, 101)))
    assert stats_ms([]) is None


def test_window_metrics_hit_rate_goodput_and_failures():
    good = _rec(0.0, [(0.05, 1, 1), (0.06, 1, 1), (0.07, 1, 1)], 3, isl=100, cached=60)
    slow = _rec(0.0, [(0.5, 1, 1), (0.6, 1, 1), (0.7, 1, 1)], 3, isl=100, cached=20)
    bad = RequestRecord("x", "measured", 100, 3, 0, error="HTTP 500: boom")
    m = compute([good, slow, bad], 0.0, 1.0, slo_ttft_ms=100)
    assert m["counts"]["completed"] == 2 and m["counts"]["failed"] == 1
    assert m["cache"]["hit_rate"] == pytest.approx(0.4)  # (60 + 20) / 200, token-weighted
    assert m["throughput"]["uncached_input_tokens_per_s"] == pytest.approx(120)
    assert m["throughput"]["output_tokens_per_s"] == pytest.approx(6)
    assert m["throughput"]["total_tokens_per_s"] == pytest.approx(206)
    assert m["goodput"]["requests_per_s"] == pytest.approx(1.0)
    assert m["failures"] == [{"error": "HTTP 500: boom", "count": 1}]
    assert m["concurrency"]["peak"] == 2
