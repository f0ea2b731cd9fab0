"""Continuous batching on one (simulated) device: the server's single forward loop.

Every step admits waiting requests up to `max_running_requests`, gives prefilling requests at most
`chunked_prefill_size` prompt tokens between them, decodes one token for every other running
request, and runs all of it as one batched forward (attention per request, everything else on the
whole batch, so the MoE kernel sees the batch). Then the step pays the device's time: a fixed cost
per step plus per-token costs, divided over the tensor-parallel ranks plus an all-reduce cost per
step, plus a launch cost per MoE expert call — the timing a GPU would add (the only simulated part;
the forward pass is real numpy).
"""
from __future__ import annotations

import itertools
import logging
import queue
import threading
import time
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from tinyserve.layers import moe_kernels
from tinyserve.layers.attention import KVCache

log = logging.getLogger("tinyserve.scheduler")
FINISHED = None


@dataclass
class DeviceOptions:
    """Scheduler limits and the simulated device's timing (all zero: only the real CPU compute)."""

    max_running_requests: int = 64
    chunked_prefill_size: int = 512
    """Prompt tokens per step over all prefilling requests; -1: a whole prompt at once."""
    step_overhead_ms: float = 0.0
    """Fixed device cost of one forward step (kernel launches, weight reads), whatever the batch."""
    prefill_us_per_token: float = 0.0
    """Device cost per uncached prompt token."""
    decode_ms_per_seq: float = 0.0
    """Device cost per decoded sequence in a step."""
    tp: int = 1
    """Tensor-parallel ranks: the device costs are divided over them..."""
    tp_comm_ms: float = 0.0
    """...and each step pays this all-reduce cost per extra rank."""
    kernel_launch_us: float = 0.0
    """Device cost of each MoE expert call the step issued (every rank launches them all)."""

    def step_seconds(self, prefill_tokens: int, decode_seqs: int, launches: int = 0) -> float:
        work_ms = (self.step_overhead_ms + prefill_tokens * self.prefill_us_per_token / 1000
                   + decode_seqs * self.decode_ms_per_seq)
        launch_ms = launches * self.kernel_launch_us / 1000
        return (work_ms / self.tp + self.tp_comm_ms * (self.tp - 1) + launch_ms) / 1000


@dataclass
class Sequence:
    """One request inside the scheduler; tokens come out of `out` (FINISHED, or an exception, ends it)."""

    prompt: list[int]
    max_tokens: int
    ignore_eos: bool
    out: queue.SimpleQueue = field(default_factory=queue.SimpleQueue)
    cached_tokens: int = 0
    filled: int = 0
    generated: int = 0
    last_token: int = -1
    caches: list[KVCache] = field(default_factory=list)

    @property
    def prefilling(self) -> bool:
        return self.filled < len(self.prompt)


class Scheduler:
    """One thread running forward steps for every submitted Sequence."""

    def __init__(self, model, prefix_cache, eos_token_id: int, options: DeviceOptions):
        self.model, self.cache, self.eos, self.options = model, prefix_cache, eos_token_id, options
        self.waiting: deque[Sequence] = deque()
        self.running: list[Sequence] = []
        self._wake = threading.Condition()
        threading.Thread(target=self._loop, name="scheduler", daemon=True).start()

    def submit(self, seq: Sequence) -> None:
        with self._wake:
            self.waiting.append(seq)
            self._wake.notify()

    def _loop(self) -> None:
        while True:
            with self._wake:
                while not self.waiting and not self.running:
                    self._wake.wait()
            try:
                self.step()
            except Exception as exc:  # the server answers each request with the error, and keeps serving
                log.exception("forward step failed")
                for seq in self.running:
                    seq.out.put(exc)
                self.running = []

    def _admit(self) -> None:
        with self._wake:
            while self.waiting and len(self.running) < self.options.max_running_requests:
                seq = self.waiting.popleft()
                seq.cached_tokens, kv = self.cache.match(seq.prompt)
                seq.caches = [KVCache() for _ in self.model.model.layers]
                for cache, (k, v) in zip(seq.caches, kv):
                    cache.append(k, v)
                seq.filled = seq.cached_tokens
                self.running.append(seq)

    def step(self) -> None:
        """Admit, pick this step's tokens, run one batched forward, pay the device time, emit tokens."""
        self._admit()
        budget = self.options.chunked_prefill_size if self.options.chunked_prefill_size > 0 else 1 << 62
        batch: list[tuple[Sequence, list[int], int]] = []
        prefill_tokens = decode_seqs = 0
        for seq in self.running:
            if not seq.prefilling:
                batch.append((seq, [seq.last_token], len(seq.prompt) + seq.generated - 1))
                decode_seqs += 1
            elif budget > 0:
                ids = seq.prompt[seq.filled:seq.filled + budget]
                batch.append((seq, ids, seq.filled))
                budget -= len(ids)
                prefill_tokens += len(ids)
        if not batch:
            return
        moe_kernels.ACTIVE.launches = 0
        hidden = forward_batch(self.model, [(ids, start, seq.caches) for seq, ids, start in batch])
        ready = []
        for (seq, ids, _), h in zip(batch, hidden):
            if seq.prefilling:
                seq.filled += len(ids)
                if seq.prefilling:
                    continue  # the next chunk comes in a later step
                self.cache.insert(seq.prompt, [(c.keys[0], c.values[0]) for c in seq.caches])
            ready.append((seq, h[-1]))
        tokens = np.argmax(self.model.logits(np.stack([h for _, h in ready])), axis=-1) if ready else []
        time.sleep(self.options.step_seconds(prefill_tokens, decode_seqs, moe_kernels.ACTIVE.launches))
        for (seq, _), token in zip(ready, tokens):
            self._emit(seq, int(token))

    def _emit(self, seq: Sequence, token: int) -> None:
        seq.generated += 1
        seq.last_token = token
        seq.out.put(token)
        if seq.generated >= seq.max_tokens or (token == self.eos and not seq.ignore_eos):
            seq.out.put(FINISHED)
            self.running.remove(seq)


def forward_batch(model, segments: list[tuple[list[int], int, list[KVCache]]]) -> list[np.ndarray]:
    """Final hidden states of each segment (token ids, start position, that request's KV caches),
    with attention per segment and every other layer over all segments' tokens at once."""
    sizes = [len(ids) for ids, _, _ in segments]
    bounds = np.cumsum([0, *sizes])
    x = model.model.embed_tokens(np.concatenate([np.asarray(ids) for ids, _, _ in segments]))
    positions = [np.arange(start, start + n) for (_, start, _), n in zip(segments, sizes)]
    for i, layer in enumerate(model.model.layers):
        h = layer.input_layernorm(x)
        x = x + np.concatenate([layer.self_attn(h[lo:hi], pos, caches[i]) for lo, hi, pos, (_, _, caches)
                                in zip(bounds[:-1], bounds[1:], positions, segments)])
        x = x + layer.mlp(layer.post_attention_layernorm(x))
    x = model.model.norm(x)
    return [x[lo:hi] for lo, hi in itertools.pairwise(bounds)]
