"""Benchmark workloads: exact-length token-id prompts, fixed ISL/OSL, prefix-cache groups.

A prefix-cache workload is built the way sglang's generated-shared-prefix dataset is: groups of
requests share a prefix, each request adds a unique suffix. A target hit rate h becomes a prefix of
round(h * ISL) tokens; once warmup has primed every group's prefix, each measured request can hit
exactly prefix_len / ISL of its input, which is what the validity gate then checks.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


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
            raise WorkloadError(
                f"--prefix-hit must be in [0, 1) (got {self.prefix_hit}); a request "
                "needs at least one uncached token"
            )
        if self.prefix_hit > 0 and self.isl - self.prefix_len < 1:
            raise WorkloadError(f"--prefix-hit {self.prefix_hit} leaves no unique suffix at ISL {self.isl}")
        if self.prefix_groups < 1:
            raise WorkloadError(f"--prefix-groups must be at least 1 (got {self.prefix_groups})")
        if self.vocab_size < 16:
            raise WorkloadError(f"--vocab-size must be at least 16 (got {self.vocab_size})")
        return self

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "prefix_len": self.prefix_len, "expected_hit_rate": self.expected_hit_rate}


PRESETS: dict[str, Workload] = {
    # The GLM-5.2 port on MI355X: 20k input, 1k output, 60% prefix-cache hit.
    "glm52-mi355x": Workload(
        isl=20000, osl=1000, num_prompts=256, prefix_hit=0.6, prefix_groups=16, name="glm52-mi355x"
    ),
    "chat-short": Workload(isl=1024, osl=256, num_prompts=500, name="chat-short"),
    "decode-heavy": Workload(isl=128, osl=2048, num_prompts=200, name="decode-heavy"),
}


def preset(name: str) -> Workload:
    """The named preset workload, or a WorkloadError listing the known names."""
    if name not in PRESETS:
        raise WorkloadError(f"unknown preset {name!r}; known presets: {', '.join(sorted(PRESETS))}")
    return PRESETS[name]
