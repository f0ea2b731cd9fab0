"""Fixtures for the bench tests: real streaming servers on 127.0.0.1 and a runner for the real client."""

from __future__ import annotations

import pytest

from tests.tools.bench.sse_server import Behaviour, SSEServer
from tools.bench import BenchConfig, Workload, result_from_run
from tools.bench.runner import run_async, run_benchmark


@pytest.fixture
def sse_server():
    """Factory: sse_server(Behaviour(...)) -> a started SSEServer, stopped after the test."""
    started = []

    def make(behaviour: Behaviour | None = None) -> SSEServer:
        server = SSEServer(behaviour or Behaviour()).start()
        started.append(server)
        return server

    yield make
    for server in started:
        server.stop()


def bench(server: SSEServer, **kw):
    """Run the real benchmark against server; returns (result, raw run)."""
    wl = kw.pop("workload", None) or Workload(
        isl=kw.pop("isl", 64),
        osl=kw.pop("osl", 20),
        num_prompts=kw.pop("num_prompts", 12),
        prefix_hit=kw.pop("prefix_hit", 0.0),
        prefix_groups=kw.pop("prefix_groups", 2),
    )
    kw.setdefault("max_concurrency", 4)
    kw.setdefault("timeout_s", 10.0)
    cfg = BenchConfig(base_url=server.url, model="m", workload=wl, **kw)
    run = run_async(run_benchmark(cfg))
    return result_from_run(run, cfg), run
