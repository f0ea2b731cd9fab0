"""Greedy generation on the CPU with prefix reuse, batched by the scheduler on one simulated device."""
from __future__ import annotations

from collections.abc import Iterator

from tinyserve.prefix_cache import PrefixCache
from tinyserve.scheduler import FINISHED, DeviceOptions, Scheduler, Sequence


class RequestError(ValueError):
    """A request the engine cannot serve (too long, empty); the server answers 400 with the message."""


class Generation:
    """One request's greedy decode; iterate for token ids, then read the counts."""

    def __init__(self, engine: Engine, prompt: list[int], max_tokens: int, ignore_eos: bool):
        self.engine = engine
        self.seq = Sequence(prompt, max_tokens, ignore_eos)
        self.completion_tokens = 0
        self.finish_reason = "length"

    @property
    def cached_tokens(self) -> int:
        return self.seq.cached_tokens

    def __iter__(self) -> Iterator[int]:
        self.engine.scheduler.submit(self.seq)
        while True:
            item = self.seq.out.get()
            if item is FINISHED:
                return
            if isinstance(item, Exception):
                raise item
            self.completion_tokens += 1
            if item == self.engine.eos_token_id and not self.seq.ignore_eos:
                self.finish_reason = "stop"
            yield item


class Engine:
    def __init__(self, model, eos_token_id: int, options: DeviceOptions | None = None,
                 cache: PrefixCache | None = None):
        self.model = model
        self.eos_token_id = eos_token_id
        self.options = options or DeviceOptions()
        self.cache = cache or PrefixCache()
        self.max_context = model.config.max_position_embeddings
        self.scheduler = Scheduler(model, self.cache, eos_token_id, self.options)

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
