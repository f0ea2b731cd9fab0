"""Greedy generation on the CPU with prefix reuse, plus optional delays that mimic GPU timing."""
from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from tinyserve.layers.attention import KVCache
from tinyserve.prefix_cache import PrefixCache


class RequestError(ValueError):
    """A request the engine cannot serve (too long, empty); the server answers 400 with the message."""


@dataclass
class EngineOptions:
    prefill_chunk: int = 256
    """Prompt tokens per forward pass (bounds attention memory on long prompts)."""
    prefill_us_per_token: float = 0.0
    """Extra sleep per uncached prompt token, so cache hits show up in TTFT like on a GPU."""
    token_delay_ms: float = 0.0
    """Extra sleep per generated token (a slower 'GPU')."""


class Generation:
    """One request's greedy decode; iterate for token ids, then read the counts."""

    def __init__(self, engine: Engine, prompt: list[int], max_tokens: int, ignore_eos: bool):
        self.engine, self.prompt, self.max_tokens, self.ignore_eos = engine, prompt, max_tokens, ignore_eos
        self.cached_tokens = 0
        self.completion_tokens = 0
        self.finish_reason = "length"

    def __iter__(self) -> Iterator[int]:
        engine, model = self.engine, self.engine.model
        self.cached_tokens, cached_kv = engine.cache.match(self.prompt)
        caches = [KVCache() for _ in model.model.layers]
        for cache, (k, v) in zip(caches, cached_kv):
            cache.append(k, v)
        hidden = None
        for lo in range(self.cached_tokens, len(self.prompt), engine.options.prefill_chunk):
            chunk = self.prompt[lo:lo + engine.options.prefill_chunk]
            hidden = model.forward(np.asarray(chunk), lo, caches)
        engine.cache.insert(self.prompt, [(c.keys[0], c.values[0]) for c in caches])
        engine.sleep_us((len(self.prompt) - self.cached_tokens) * engine.options.prefill_us_per_token)
        position = len(self.prompt)
        while self.completion_tokens < self.max_tokens:
            token = int(np.argmax(model.logits(hidden[-1:])[0]))
            self.completion_tokens += 1
            engine.sleep_us(engine.options.token_delay_ms * 1000)
            yield token
            if token == engine.eos_token_id and not self.ignore_eos:
                self.finish_reason = "stop"
                return
            if self.completion_tokens < self.max_tokens:
                hidden = model.forward(np.asarray([token]), position, caches)
                position += 1


class Engine:
    def __init__(self, model, eos_token_id: int, options: EngineOptions | None = None,
                 cache: PrefixCache | None = None):
        self.model = model
        self.eos_token_id = eos_token_id
        self.options = options or EngineOptions()
        self.cache = cache or PrefixCache()
        self.max_context = model.config.max_position_embeddings

    def generate(self, prompt: list[int], max_tokens: int, ignore_eos: bool = False) -> Generation:
        if not prompt:
            raise RequestError("The prompt is empty: send at least one token")
        if max_tokens < 1:
            raise RequestError(f"max_tokens must be at least 1, got {max_tokens}")
        if len(prompt) + max_tokens > self.max_context:
            raise RequestError(f"This model's maximum context length is {self.max_context} tokens. However, you "
                               f"requested {len(prompt) + max_tokens} tokens ({len(prompt)} in the prompt, "
                               f"{max_tokens} for the completion).")
        vocab = self.model.config.vocab_size
        if any(not 0 <= t < vocab for t in prompt):
            raise RequestError(f"Prompt token ids must be in [0, {vocab})")
        return Generation(self, prompt, max_tokens, ignore_eos)

    @staticmethod
    def sleep_us(us: float) -> None:
        if us > 0:
            time.sleep(us / 1e6)
