"""Validity gates and the JSON a result is written as (canonical + sglang + vllm names)."""

from __future__ import annotations

import json

from tests.tools.bench.conftest import bench
from tests.tools.bench.sse_server import Behaviour
from tools.bench import Workload

SGLANG_KEYS = [
    "backend",
    "dataset_name",
    "request_rate",
    "max_concurrency",
    "random_input_len",
    "random_output_len",
    "duration",
    "completed",
    "total_input_tokens",
    "total_output_tokens",
    "request_throughput",
    "input_throughput",
    "output_throughput",
    "total_throughput",
    "mean_e2e_latency_ms",
    "median_e2e_latency_ms",
    "std_e2e_latency_ms",
    "p90_e2e_latency_ms",
    "p99_e2e_latency_ms",
    "mean_ttft_ms",
    "median_ttft_ms",
    "std_ttft_ms",
    "p90_ttft_ms",
    "p99_ttft_ms",
    "mean_tpot_ms",
    "median_tpot_ms",
    "std_tpot_ms",
    "p99_tpot_ms",
    "mean_itl_ms",
    "median_itl_ms",
    "std_itl_ms",
    "p95_itl_ms",
    "p99_itl_ms",
    "max_itl_ms",
    "concurrency",
    "max_output_tokens_per_s",
    "max_concurrent_requests",
]
VLLM_KEYS = [
    "duration",
    "completed",
    "failed",
    "total_input_tokens",
    "total_output_tokens",
    "request_throughput",
    "request_goodput",
    "output_throughput",
    "total_token_throughput",
    "input_lens",
    "output_lens",
    "ttfts",
    "errors",
    "mean_ttft_ms",
    "median_ttft_ms",
    "std_ttft_ms",
    "p99_ttft_ms",
    "mean_tpot_ms",
    "median_tpot_ms",
    "std_tpot_ms",
    "p99_tpot_ms",
    "mean_itl_ms",
    "median_itl_ms",
    "std_itl_ms",
    "p99_itl_ms",
    "mean_e2el_ms",
    "median_e2el_ms",
    "std_e2el_ms",
    "p99_e2el_ms",
    "max_output_tokens_per_s",
    "max_concurrent_requests",
]


def test_json_has_canonical_sglang_and_vllm_keys(sse_server, tmp_path):
    r, _ = bench(sse_server(Behaviour(ttft_s=0.02, itl_s=0.002)), isl=32, osl=6, num_prompts=6)
    path = tmp_path / "r.json"
    r.write(path)
    data = json.loads(path.read_text())
    missing = [k for k in SGLANG_KEYS + VLLM_KEYS if k not in data]
    assert missing == []
    assert data["valid"] is True and data["schema"] == "rocport.bench/1"
    assert data["mean_ttft_ms"] == data["latency_ms"]["ttft"]["mean"]
    assert data["mean_e2el_ms"] == data["mean_e2e_latency_ms"] == data["latency_ms"]["e2e"]["mean"]
    assert data["output_throughput"] == data["throughput"]["output_tokens_per_s"]
    assert data["completed"] == 6 and data["total_output_tokens"] == 36 and data["output_lens"] == [6] * 6
    assert set(data["throughput_kinds"]) >= set(data["throughput"])
    assert data["max_output_tokens_per_s"] >= 6 and data["max_concurrent_requests"] <= 4


def test_output_length_gate_fires_when_the_server_stops_early(sse_server):
    r, _ = bench(sse_server(Behaviour(short_by=2, ttft_s=0.005, itl_s=0.001)), isl=16, osl=10, num_prompts=4)
    assert not r.valid
    assert any(
        "output length differs from the requested OSL in 100.0% of requests" in x for x in r.invalid_reasons
    )


def test_hit_rate_gate_fires_when_the_server_cannot_hit_the_target(sse_server):
    # Target 60%, but this server only caches token-id prompts: chat prompts never hit.
    r, _ = bench(
        sse_server(Behaviour(ttft_s=0.005, itl_s=0.001)),
        endpoint="chat",
        workload=Workload(isl=50, osl=3, num_prompts=4, prefix_hit=0.6, prefix_groups=2),
    )
    assert not r.valid
    assert any("cache hit rate 0.0% is off the target 60.0%" in x for x in r.invalid_reasons)


def test_unmeasurable_hit_rate_is_invalid_and_says_how_to_enable_it(sse_server):
    r, _ = bench(
        sse_server(Behaviour(usage="none", ttft_s=0.005, itl_s=0.001)),
        isl=100,
        osl=3,
        num_prompts=4,
        prefix_hit=0.5,
    )
    assert not r.valid
    assert any("--enable-cache-report" in x for x in r.invalid_reasons)


def test_failure_threshold_can_allow_some_failures(sse_server):
    server = sse_server(Behaviour(fail="http500", fail_every=4, ttft_s=0.005, itl_s=0.001))
    r, _ = bench(server, isl=16, osl=3, num_prompts=8, warmup=0, max_failure_rate=0.3)
    assert r.counts["failed"] == 2 and r.valid, r.invalid_reasons
