"""Benchmark request plans: every request body of a run rendered before the clock starts.

Prompts are exact-length token-id lists for /v1/completions, or words that are one token each in
the BPE vocabularies we know (words.txt) for chat. Prefix-cache groups share one rendered prefix;
each request adds a unique suffix, so none shares more than its group's prefix with another.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from tools.bench.workload import Workload, WorkloadError


@cache
def _words() -> list[str]:
    """Common English words that are a single token (with their leading space) in every BPE vocabulary
    we know; chat prompts are text, so this keeps their length close to the requested ISL."""
    return (Path(__file__).with_name("words.txt")).read_text().split()


@dataclass
class PlannedRequest:
    """One request ready to send: its JSON body is rendered before the clock starts."""

    rid: str
    phase: str
    """"warmup", "measured" or "single"."""
    group: int | None
    isl: int
    osl: int
    cacheable: int
    """Prompt tokens the server can serve from its prefix cache (primed prefix length)."""
    body: bytes = field(repr=False)


def _ids_json(ids: list[int]) -> bytes:
    return ",".join(map(str, ids)).encode()


class _Builder:
    """Renders request bodies; prefixes are rendered once and spliced into each body."""

    def __init__(self, wl: Workload, model: str, endpoint: str, extra: dict[str, Any]):
        self.wl, self.model, self.endpoint, self.extra = wl, model, endpoint, extra
        self.rng = random.Random(wl.seed)
        self.np_rng = np.random.default_rng(wl.seed)
        self.lo = min(1000, wl.vocab_size // 10)
        self.serial = 0
        self.prefixes: list[list[int]] = []
        if wl.prefix_len:
            self.prefixes = [self._random_ids(wl.prefix_len) for _ in range(wl.prefix_groups)]
        self.prefix_bytes = [self._render_prompt(p) for p in self.prefixes]

    def _random_ids(self, n: int) -> list[int]:
        ids: list[int] = self.np_rng.integers(self.lo, self.wl.vocab_size, size=n).tolist()
        return ids

    def _unique_suffix(self, n: int) -> list[int]:
        # The first suffix token is distinct per request so no two requests share more than the prefix.
        span = self.wl.vocab_size - self.lo
        return [self.lo + self.serial % span, *self._random_ids(n - 1)]

    def _render_prompt(self, ids: list[int]) -> bytes:
        if self.endpoint == "completions":
            return _ids_json(ids)
        words = _words()
        return " ".join(words[i % len(words)] for i in ids).encode()

    def _params(self, osl: int) -> dict[str, Any]:
        return {
            "model": self.model,
            "max_tokens": osl,
            "min_tokens": osl,
            "ignore_eos": True,
            "temperature": 0.0,
            "stream": True,
            "stream_options": {"include_usage": True, "continuous_usage_stats": True},
            **self.extra,
        }

    def request(self, phase: str, group: int | None, osl: int) -> PlannedRequest:
        wl = self.wl
        self.serial += 1
        suffix_len = wl.isl - (wl.prefix_len if group is not None else 0)
        suffix = self._render_prompt(self._unique_suffix(suffix_len))
        if group is None:
            prompt = suffix
        else:
            sep = b"," if self.endpoint == "completions" else b" "
            prompt = self.prefix_bytes[group] + sep + suffix
        params = json.dumps(self._params(osl), separators=(",", ":")).encode()
        if self.endpoint == "completions":
            body = b'{"prompt":[' + prompt + b"]," + params[1:]
        else:
            body = b'{"messages":[{"role":"user","content":"' + prompt + b'"}],' + params[1:]
        cacheable = wl.prefix_len if group is not None else 0
        return PlannedRequest(f"rocport-{phase}-{self.serial}", phase, group, wl.isl, osl, cacheable, body)


@dataclass
class Plan:
    """Every request of a run, in sending order per phase."""

    warmup: list[PlannedRequest]
    measured: list[PlannedRequest]
    single: list[PlannedRequest]


def build_plan(
    wl: Workload,
    model: str,
    *,
    endpoint: str = "completions",
    warmup: int = 1,
    prime_rounds: int = 1,
    single_stream: int = 0,
    extra_body: dict[str, Any] | None = None,
) -> Plan:
    """Render all request bodies: primes for each prefix group, warmup, measured, single-stream.

    The warmup phase primes each group's prefix `prime_rounds` times (use the data-parallel size
    when the server routes round-robin across ranks with separate caches), then sends `warmup`
    more requests; all warmup requests ask for at most 16 output tokens.
    """
    wl.validate()
    if endpoint not in ("completions", "chat"):
        raise WorkloadError(f"unknown endpoint {endpoint!r}; use completions or chat")
    if warmup < 0 or prime_rounds < 1 or single_stream < 0:
        raise WorkloadError("--warmup and --single-stream must be >= 0 and --prime-rounds >= 1")
    b = _Builder(wl, model, endpoint, extra_body or {})
    groups = list(range(wl.prefix_groups)) if wl.prefix_len else []

    def group_of(i: int) -> int | None:
        # Seeded shuffle of group order, so consecutive requests rarely share a prefix.
        return groups[b.rng.randrange(len(groups))] if groups else None

    warm_osl = min(wl.osl, 16)
    primes = [b.request("warmup", g, warm_osl) for g in groups for _ in range(prime_rounds)]
    extra = [b.request("warmup", group_of(i), warm_osl) for i in range(warmup)]
    measured = [b.request("measured", group_of(i), wl.osl) for i in range(wl.num_prompts)]
    single = [b.request("single", group_of(i), wl.osl) for i in range(single_stream)]
    return Plan(warmup=primes + extra, measured=measured, single=single)
