"""The real client against real streaming servers: known timings come back as the right metrics."""

from __future__ import annotations

import itertools

import pytest

from tests.tools.bench.conftest import bench
from tests.tools.bench.sse_server import Behaviour
from tools.bench import Workload


@pytest.mark.serial  # millisecond timings: run alone after the parallel part, not with wider bounds
def test_metrics_match_the_known_server_timings(sse_server):
    server = sse_server(Behaviour(ttft_s=0.04, itl_s=0.005))
    r, run = bench(server, isl=64, osl=21, num_prompts=12, max_concurrency=4)
    assert r.valid, r.invalid_reasons
    lat = r.latency_ms
    assert 40 <= lat["ttft"]["median"] <= 55
    assert 4.5 <= lat["tpot"]["median"] <= 6.5  # (E2E - TTFT) / (21 - 1) = 5 ms
    assert 4.0 <= lat["itl"]["median"] <= 6.5
    assert 140 <= lat["e2e"]["median"] <= 170  # 40 + 20 * 5
    assert r.counts == {
        **r.counts,
        "completed": 12,
        "failed": 0,
        "output_tokens": 12 * 21,
        "input_tokens": 12 * 64,
        "output_length_mismatches": 0,
    }
    assert r.throughput["output_tokens_per_s"] == pytest.approx(12 * 21 / r.duration_s)
    assert r.throughput["requests_per_s"] == pytest.approx(12 / r.duration_s)
    # Client TTFT against the server's own clock (same CLOCK_MONOTONIC): within a few ms.
    truth = {s.rid: s.first_write - s.received for s in server.seen}
    errors = sorted(abs((rec.first - rec.start) - truth[rec.rid]) for rec in run.measured)
    assert errors[len(errors) // 2] < 0.005
    # Four requests at a time, on a pool of four keep-alive connections.
    assert server.max_in_flight <= 4 and server.connections == 4


def test_prefix_groups_reach_the_target_hit_rate_on_a_real_prefix_cache(sse_server):
    server = sse_server(Behaviour(ttft_s=0.005, itl_s=0.001))
    r, _ = bench(server, isl=200, osl=4, num_prompts=24, prefix_hit=0.6, prefix_groups=3)
    assert r.cache["hit_rate"] == pytest.approx(0.6, abs=0.01)
    assert r.valid, r.invalid_reasons
    assert r.throughput["uncached_input_tokens_per_s"] == pytest.approx(24 * 80 / r.duration_s, rel=0.02)


@pytest.mark.serial  # millisecond timings: run alone after the parallel part, not with wider bounds
def test_multi_token_chunks_keep_itl_per_token_honest(sse_server):
    server = sse_server(Behaviour(ttft_s=0.01, itl_s=0.009, tokens_per_chunk=3))
    r, _ = bench(server, isl=32, osl=31, num_prompts=6, max_concurrency=2)
    assert r.valid, r.invalid_reasons
    assert r.tokens_per_chunk["mean"] == pytest.approx(31 / 11)
    assert 8 <= r.latency_ms["itl"]["median"] <= 11  # one chunk every 9 ms
    assert 2.7 <= r.latency_ms["itl_per_token"]["median"] <= 3.7  # three tokens per chunk
    assert 2.7 <= r.latency_ms["tpot"]["median"] <= 3.7


@pytest.mark.parametrize(
    "behaviour",
    [
        Behaviour(split=True),
        Behaviour(crlf=True),
        Behaviour(split=True, crlf=True),
        Behaviour(usage="final"),
        Behaviour(framing="close"),
    ],
    ids=["split-mid-line", "crlf", "split-crlf", "final-usage-only", "close-delimited"],
)
def test_framing_variants_give_the_same_counts(sse_server, behaviour):
    server = sse_server(behaviour)
    r, run = bench(server, isl=16, osl=9, num_prompts=5, max_concurrency=2)
    assert r.valid, r.invalid_reasons
    assert r.counts["output_tokens"] == 45 and r.counts["chunks"] == 45
    assert all(sum(rec.tokens) == 9 for rec in run.measured)
    assert r.latency_ms["ttft"]["median"] >= 30


def test_missing_usage_is_reported_and_counted_from_chunks(sse_server):
    server = sse_server(Behaviour(usage="none"))
    r, _ = bench(server, isl=16, osl=7, num_prompts=4)
    assert r.counts["output_tokens"] == 28 and r.counts["requests_without_usage"] == 4
    assert any("without a usage block" in w for w in r.warnings)
    assert r.cache["hit_rate"] is None


@pytest.mark.parametrize(
    ("mode", "says"),
    [
        ("http500", 'HTTP 500: {"error":{"message":"scripted internal error"}}'),
        ("reset", "connection closed before the response ended"),
        ("hang", "no complete response within 1 s (client timeout)"),
        ("error_event", "server error event: scripted mid-stream error"),
    ],
)
def test_failures_are_reported_and_the_run_goes_on(sse_server, mode, says):
    server = sse_server(Behaviour(fail=mode, fail_every=3, ttft_s=0.005, itl_s=0.001))
    r, _ = bench(server, isl=16, osl=5, num_prompts=9, max_concurrency=3, timeout_s=1.0, warmup=0)
    assert r.counts["failed"] >= 1 and r.counts["completed"] >= 5
    assert r.failures[0]["error"].startswith(says)
    assert not r.valid and "failed" in r.invalid_reasons[0]
    if mode == "reset":  # no response byte: resent once on a fresh connection, reset again, reported
        assert r.counts["requests_resent"] == r.counts["failed"]


def test_unreachable_server_is_a_one_line_error():
    from tools.bench import BenchConfig, BenchConfigError
    from tools.bench.runner import run_async, run_benchmark

    cfg = BenchConfig(
        base_url="http://127.0.0.1:9", model="m", workload=Workload(isl=4, osl=2, num_prompts=1)
    )
    with pytest.raises(BenchConfigError, match=r"cannot connect to http://127.0.0.1:9"):
        run_async(run_benchmark(cfg))


def test_chat_endpoint_skips_the_role_chunk(sse_server):
    server = sse_server(Behaviour(ttft_s=0.03, itl_s=0.002))
    r, _ = bench(server, isl=16, osl=6, num_prompts=4, endpoint="chat")
    assert server.seen[-1].path == "/v1/chat/completions"
    assert r.counts["output_tokens"] == 24 and r.counts["chunks"] == 24
    assert r.latency_ms["ttft"]["median"] >= 30


def test_poisson_rate_spreads_the_sends(sse_server):
    server = sse_server(Behaviour(ttft_s=0.001, itl_s=0.0005))
    r, run = bench(server, isl=8, osl=2, num_prompts=20, max_concurrency=None, request_rate=40.0)
    starts = sorted(rec.start for rec in run.measured)
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert 0.01 <= sum(gaps) / len(gaps) <= 0.06  # 1 / 40 s on average, seeded
    assert r.config["request_rate"] == 40.0


@pytest.mark.serial  # millisecond timings: run alone after the parallel part, not with wider bounds
def test_a_blocked_client_still_records_when_the_first_token_arrived(sse_server):
    # Reads are stamped with the kernel's receive time, so a client descheduled (or busy) while
    # the first token arrives still measures the true TTFT, not the time it got around to reading.
    import asyncio
    import time

    from tools.bench.client import ConnectionPool, RequestRecord, StreamClient
    from tools.bench.runner import run_async

    server = sse_server(Behaviour(ttft_s=0.04, itl_s=0.002))
    body = b'{"model":"m","prompt":[1,2,3],"max_tokens":5,"stream":true}'

    async def one() -> RequestRecord:
        pool = ConnectionPool("127.0.0.1", server.port)
        client = StreamClient(pool, "/v1/completions", "127.0.0.1", timeout=5)
        rec = RequestRecord("blocked-1", "measured", 3, 5, 0)
        asyncio.get_running_loop().call_later(0.01, time.sleep, 0.15)  # block the loop 10..160 ms
        await client.send(rec, body)
        pool.close()
        return rec

    rec = run_async(one())
    assert rec.ok, rec.error
    seen = server.seen[-1]
    assert abs(rec.first - seen.first_write) < 0.02  # not ~110 ms late
    assert 0.035 <= rec.first - rec.start <= 0.1  # the loop was blocked until ~160 ms
