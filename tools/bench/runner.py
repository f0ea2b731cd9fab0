"""Run a benchmark: warmup (primes prefixes), the measured window, an optional single-stream phase."""

from __future__ import annotations

import asyncio
import gc
import random
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from time import perf_counter, process_time
from typing import Any, TypeVar
from urllib.parse import urlsplit

from tools.bench.client import ConnectionPool, RequestRecord, StreamClient
from tools.bench.plan import Plan, PlannedRequest, build_plan
from tools.bench.workload import Workload

T = TypeVar("T")


class BenchConfigError(ValueError):
    """A benchmark option that cannot work; the message says what to change."""


# A request that outlives this bound is stuck, not slow: generous against CPU debug servers and long prefills.
REQUEST_BASE_S = 60.0
"""Connect, queue and schedule."""
PREFILL_S_PER_1K_INPUT = 10.0
DECODE_S_PER_OUTPUT_TOKEN = 0.5


def request_timeout(workload: Workload, budget_s: float | None = None) -> float:
    """The default per-request timeout: a per-token bound on the workload's lengths, capped by what is
    left of a run's wall-time budget (never under 30 s)."""
    bound = (
        REQUEST_BASE_S
        + PREFILL_S_PER_1K_INPUT * workload.isl / 1000
        + DECODE_S_PER_OUTPUT_TOKEN * workload.osl
    )
    if budget_s is not None:
        bound = min(bound, max(budget_s, 30.0))
    return round(bound, 1)


@dataclass
class BenchConfig:
    """Everything `rocport bench` was asked to do."""

    base_url: str
    model: str
    workload: Workload
    endpoint: str = "completions"
    max_concurrency: int | None = 64
    request_rate: float = float("inf")
    warmup: int = 1
    prime_rounds: int = 1
    single_stream: int = 0
    slo_ttft_ms: float | None = None
    slo_tpot_ms: float | None = None
    timeout_s: float | None = None
    """Seconds per request before it counts as failed; None: `request_timeout(workload)`."""
    max_failure_rate: float = 0.0
    extra_body: dict[str, Any] = field(default_factory=dict)
    api_key: str | None = field(default=None, repr=False)
    """Sent as a bearer token only when given (`--api-key-env`); never recorded in results."""

    def __post_init__(self) -> None:
        if self.timeout_s is None:
            self.timeout_s = request_timeout(self.workload)

    def to_dict(self) -> dict[str, Any]:
        rate = self.request_rate if self.request_rate != float("inf") else "inf"
        return {
            "base_url": self.base_url,
            "model": self.model,
            "endpoint": self.endpoint,
            "max_concurrency": self.max_concurrency,
            "request_rate": rate,
            "warmup": self.warmup,
            "prime_rounds": self.prime_rounds,
            "single_stream": self.single_stream,
            "slo_ttft_ms": self.slo_ttft_ms,
            "slo_tpot_ms": self.slo_tpot_ms,
            "timeout_s": self.timeout_s,
            "max_failure_rate": self.max_failure_rate,
            "extra_body": self.extra_body,
        }


@dataclass
class BenchRun:
    """Raw records of a run; `tools.bench.metrics` turns them into numbers."""

    warmup: list[RequestRecord]
    measured: list[RequestRecord]
    single: list[RequestRecord]
    window_start: float
    window_end: float
    single_window: tuple[float, float] | None = None
    client_cpu_s: float = 0.0
    """CPU time this process spent during the measured window (the client's own cost)."""


def endpoint_path(base_url: str, endpoint: str) -> tuple[str, str, int, bool, str]:
    """(host, host header, port, tls, request path) for the base URL; rejects what we cannot use."""
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise BenchConfigError(f"--base-url must look like http://HOST:PORT (got {base_url!r})")
    tls = parts.scheme == "https"
    try:
        port = parts.port or (443 if tls else 80)
    except ValueError:  # urllib's "Port out of range 0-65535" / "Port could not be cast to integer value"
        raise BenchConfigError(
            f"--base-url {base_url!r}: the port must be a number from 1 to 65535"
        ) from None
    prefix = parts.path.rstrip("/")
    if not prefix.endswith("/v1"):
        prefix += "/v1"
    path = prefix + ("/completions" if endpoint == "completions" else "/chat/completions")
    return parts.hostname, parts.netloc, port, tls, path


def _record(req: PlannedRequest) -> RequestRecord:
    return RequestRecord(req.rid, req.phase, req.isl, req.osl, req.cacheable)


async def _run_all(
    client: StreamClient,
    reqs: list[PlannedRequest],
    concurrency: int | None,
    rate: float,
    seed: int,
    on_done: Callable[[RequestRecord], None] | None = None,
) -> list[RequestRecord]:
    """Send reqs with at most `concurrency` in flight and Poisson arrivals at `rate` (inf: all at once);
    `on_done` hears of each finished request (a progress display)."""
    records = [_record(r) for r in reqs]
    sem = asyncio.Semaphore(concurrency) if concurrency else None

    async def one(rec: RequestRecord, body: bytes) -> None:
        if sem is None:
            await client.send(rec, body)
        else:
            async with sem:
                await client.send(rec, body)
        if on_done is not None:
            on_done(rec)

    rng = random.Random(seed)
    tasks = []
    for rec, req in zip(records, reqs, strict=True):
        tasks.append(asyncio.ensure_future(one(rec, req.body)))
        if rate != float("inf"):
            await asyncio.sleep(rng.expovariate(rate))
    await asyncio.gather(*tasks)
    return records


async def run_benchmark(
    cfg: BenchConfig, plan: Plan | None = None, on_done: Callable[[RequestRecord], None] | None = None
) -> BenchRun:
    """Run warmup, the measured phase and the single-stream phase against cfg.base_url."""
    if cfg.max_concurrency is not None and cfg.max_concurrency < 1:
        raise BenchConfigError("--max-concurrency must be at least 1")
    if cfg.request_rate <= 0:
        raise BenchConfigError("--request-rate must be positive (omit it for an infinite rate)")
    host, host_header, port, tls, path = endpoint_path(cfg.base_url, cfg.endpoint)
    plan = plan or build_plan(
        cfg.workload,
        cfg.model,
        endpoint=cfg.endpoint,
        warmup=cfg.warmup,
        prime_rounds=cfg.prime_rounds,
        single_stream=cfg.single_stream,
        extra_body=cfg.extra_body,
    )
    if tls:
        raise BenchConfigError(
            "https is not supported by the benchmark client; use http:// and run the "
            "client next to the server"
        )
    pool = ConnectionPool(host, port)
    # BenchConfig.__post_init__ fills timeout_s from the workload; the same default if a caller unset it
    timeout = cfg.timeout_s if cfg.timeout_s is not None else request_timeout(cfg.workload)
    client = StreamClient(pool, path, host_header, timeout, api_key=cfg.api_key)
    conc = cfg.max_concurrency
    try:
        try:
            await pool.fill(conc or 1)
        except (TimeoutError, OSError) as exc:
            raise BenchConfigError(
                f"cannot connect to {cfg.base_url}: {exc or 'timeout'}; "
                "is the server running and the URL right?"
            ) from None
        warm = await _run_all(client, plan.warmup, conc, float("inf"), cfg.workload.seed, on_done)
        if warm and not any(r.ok for r in warm):
            # Nothing will work (wrong model name, wrong endpoint, server not ready): say so now.
            raise BenchConfigError(f"all {len(warm)} warmup requests failed; first error: {warm[0].error}")
        # The measured window: no GC pauses inside it, nothing but sending and reading.
        gc.collect()
        gc.disable()
        try:
            cpu0, start = process_time(), perf_counter()
            measured = await _run_all(
                client, plan.measured, conc, cfg.request_rate, cfg.workload.seed, on_done
            )
            cpu = process_time() - cpu0
            end = max([r.end for r in measured if r.ok] or [perf_counter()])
        finally:
            gc.enable()
        single, single_window = [], None
        if plan.single:
            s0 = perf_counter()
            single = await _run_all(client, plan.single, 1, float("inf"), cfg.workload.seed, on_done)
            single_window = (s0, perf_counter())
    finally:
        pool.close()
    return BenchRun(warm, measured, single, start, end, single_window, cpu)


def run_async(coro: Coroutine[Any, Any, T]) -> T:
    """Run coro on uvloop when it is installed (it roughly halves the client's CPU per chunk)."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coro)
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(coro)
