"""Comparing two results: percentage deltas, which side is better, and other tools' files."""

from __future__ import annotations

import json

import pytest

from tools.bench import compare_results, load_result


def _row(rows, metric):
    return next(r for r in rows if r.metric.startswith(metric))


def test_deltas_and_direction():
    a = {
        "request_throughput": 10.0,
        "output_throughput": 1000.0,
        "median_ttft_ms": 100.0,
        "p99_tpot_ms": 20.0,
    }
    b = {"request_throughput": 12.0, "output_throughput": 900.0, "median_ttft_ms": 80.0, "p99_tpot_ms": 20.05}
    rows = compare_results(a, b)
    assert (
        _row(rows, "Requests/s").delta_pct == pytest.approx(20.0) and _row(rows, "Requests/s").better == "B"
    )
    assert (
        _row(rows, "Output tok/s").delta_pct == pytest.approx(-10.0)
        and _row(rows, "Output tok/s").better == "A"
    )
    assert (
        _row(rows, "Median TTFT").delta_pct == pytest.approx(-20.0)
        and _row(rows, "Median TTFT").better == "B"
    )
    assert _row(rows, "P99 TPOT").better == "same"


def test_reads_sglang_jsonl_and_vllm_json(tmp_path):
    sg = tmp_path / "sglang.jsonl"
    sg.write_text(
        json.dumps({"output_throughput": 1.0})
        + "\n"
        + json.dumps({"output_throughput": 2626.0, "median_e2e_latency_ms": 9.0})
        + "\n"
    )
    vl = tmp_path / "vllm.json"
    vl.write_text(json.dumps({"output_throughput": 3192.0, "median_e2el_ms": 8.0}))
    rows = compare_results(load_result(sg), load_result(vl))
    out = _row(rows, "Output tok/s")
    assert (out.a, out.b) == (2626.0, 3192.0) and out.delta_pct == pytest.approx((3192 - 2626) / 2626 * 100)
    assert _row(rows, "Median E2E").better == "B"


def test_unreadable_files_say_what_is_wrong(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("not json")
    with pytest.raises(ValueError, match="is not JSON"):
        load_result(bad)
    with pytest.raises(ValueError, match="does not exist"):
        load_result(tmp_path / "missing.json")
