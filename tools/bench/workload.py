"""Benchmark workloads: exact-length token-id prompts, fixed ISL/OSL, prefix-cache groups.

A prefix-cache workload is built the way sglang's generated-shared-prefix dataset is: groups of
requests share a prefix, each request adds a unique suffix. A target hit rate h becomes a prefix of
round(h * ISL) tokens; once warmup has primed every group's prefix, each measured request can hit
exactly prefix_len / ISL of its input, which is what the validity gate then checks.
"""
from __future__ import annotations

import json
import random
from dataclasses import asdict, dataclass, field

import numpy as np

# Common English words that are a single token (with their leading space) in every BPE vocabulary
# we know; chat prompts are text, so this keeps their length close to the requested ISL.
_WORDS = ["the", "of", "and", "to", "in", "is", "you", "that", "it", "he", "was", "for", "on", "are", "as", "with", "his", "they", "at", "be", "this", "have", "from", "or", "one", "had", "by", "word", "but", "not", "what", "all", "were", "we", "when", "your", "can", "said", "there", "use", "an", "each", "which", "she", "do", "how", "their", "if", "will", "up", "other", "about", "out", "many", "then", "them", "these", "so", "some", "her", "would", "make", "like", "him", "into", "time", "has", "look", "two", "more", "write", "go", "see", "number", "no", "way", "could", "people", "my", "than", "first", "water", "been", "call", "who", "oil", "its", "now", "find", "long", "down", "day", "did", "get", "come", "made", "may", "part", "over", "new", "sound", "take", "only", "little", "work", "know", "place", "year", "live", "me", "back", "give", "most", "very", "after", "thing", "our", "just", "name", "good", "sentence", "man", "think", "say", "great", "where", "help", "through", "much", "before", "line", "right", "too", "mean", "old", "any", "same", "tell", "boy", "follow", "came", "want", "show", "also", "around", "form", "three", "small", "set", "put", "end", "does", "another", "well", "large", "must", "big", "even", "such", "because", "turn", "here", "why", "ask", "went", "men", "read", "need", "land", "different", "home", "us", "move", "try", "kind", "hand", "picture", "again", "change", "off", "play", "spell", "air"]


class WorkloadError(ValueError):
    """A workload that cannot be built as asked; the message says what to change."""


@dataclass(frozen=True)
class Workload:
    """The shape of the traffic: lengths, prefix sharing, and how many requests."""

    isl: int
    """Input tokens per request (exact for /v1/completions, approximate for chat)."""
    osl: int
    """Output tokens per request, forced with ignore_eos + max_tokens (+ min_tokens)."""
    num_prompts: int = 200
    """Measured requests."""
    prefix_hit: float = 0.0
    """Target token-weighted prefix-cache hit rate of the measured requests (0..1)."""
    prefix_groups: int = 8
    """Groups sharing one prefix each; ignored when prefix_hit is 0."""
    seed: int = 0
    vocab_size: int = 32000
    """Token ids are drawn below this; keep it at or under the model's vocabulary size."""
    name: str = "custom"

    @property
    def prefix_len(self) -> int:
        return round(self.prefix_hit * self.isl) if self.prefix_hit > 0 else 0

    @property
    def expected_hit_rate(self) -> float:
        """What a server can hit once every prefix is primed: prefix_len / ISL."""
        return self.prefix_len / self.isl

    def validate(self) -> Workload:
        if self.isl < 1 or self.osl < 1:
            raise WorkloadError(f"ISL and OSL must be at least 1 (got ISL {self.isl}, OSL {self.osl})")
        if self.num_prompts < 1:
            raise WorkloadError(f"--num-prompts must be at least 1 (got {self.num_prompts})")
        if not 0.0 <= self.prefix_hit < 1.0:
            raise WorkloadError(f"--prefix-hit must be in [0, 1) (got {self.prefix_hit}); a request "
                                "needs at least one uncached token")
        if self.prefix_hit > 0 and self.isl - self.prefix_len < 1:
            raise WorkloadError(f"--prefix-hit {self.prefix_hit} leaves no unique suffix at ISL {self.isl}")
        if self.prefix_groups < 1:
            raise WorkloadError(f"--prefix-groups must be at least 1 (got {self.prefix_groups})")
        if self.vocab_size < 16:
            raise WorkloadError(f"--vocab-size must be at least 16 (got {self.vocab_size})")
        return self

    def to_dict(self) -> dict:
        return {**asdict(self), "prefix_len": self.prefix_len, "expected_hit_rate": self.expected_hit_rate}


PRESETS: dict[str, Workload] = {
    # The GLM-5.2 port on MI355X: 20k input, 1k output, 60% prefix-cache hit.
    "glm52-mi355x": Workload(isl=20000, osl=1000, num_prompts=256, prefix_hit=0.6, prefix_groups=16,
                             name="glm52-mi355x"),
    "chat-short": Workload(isl=1024, osl=256, num_prompts=500, name="chat-short"),
    "decode-heavy": Workload(isl=128, osl=2048, num_prompts=200, name="decode-heavy"),
}


def preset(name: str) -> Workload:
    """The named preset workload, or a WorkloadError listing the known names."""
    if name not in PRESETS:
        raise WorkloadError(f"unknown preset {name!r}; known presets: {', '.join(sorted(PRESETS))}")
    return PRESETS[name]


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

    def __init__(self, wl: Workload, model: str, endpoint: str, extra: dict):
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
        return self.np_rng.integers(self.lo, self.wl.vocab_size, size=n).tolist()

    def _unique_suffix(self, n: int) -> list[int]:
        # The first suffix token is distinct per request so no two requests share more than the prefix.
        span = self.wl.vocab_size - self.lo
        return [self.lo + self.serial % span] + self._random_ids(n - 1)

    def _render_prompt(self, ids: list[int]) -> bytes:
        if self.endpoint == "completions":
            return _ids_json(ids)
        return " ".join(_WORDS[i % len(_WORDS)] for i in ids).encode()

    def _params(self, osl: int) -> dict:
        return {"model": self.model, "max_tokens": osl, "min_tokens": osl, "ignore_eos": True,
                "temperature": 0.0, "stream": True,
                "stream_options": {"include_usage": True, "continuous_usage_stats": True}, **self.extra}

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


def build_plan(wl: Workload, model: str, *, endpoint: str = "completions", warmup: int = 1,
               prime_rounds: int = 1, single_stream: int = 0, extra_body: dict | None = None) -> Plan:
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
