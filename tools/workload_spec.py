"""The workload a user writes (a job's `bench:`, a sweep's `workloads:`): a preset of tools.bench or
explicit lengths. One declaration; `workload()` makes the tools.bench Workload the client sends. It lives
outside tools/bench so loading a job does not import the benchmark (numpy, the HTTP client)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from tools.bench.workload import Workload


class WorkloadSpec(BaseModel):
    """The benchmark traffic as configured: a named preset, or ISL/OSL/prompts/concurrency/cache hit."""

    model_config = ConfigDict(extra="forbid")
    preset: str | None = None
    """A named workload of tools.bench (e.g. glm52); overrides the numbers below."""
    isl: int = Field(64, ge=1)
    osl: int = Field(16, ge=1)
    num_prompts: int = Field(16, ge=1)
    max_concurrency: int = Field(4, ge=1)
    cache_hit_rate: float | None = Field(None, ge=0, le=1)

    def workload(self, vocab_size: int) -> Workload:
        """The Workload to send: the preset, or these lengths with token ids below `vocab_size`."""
        from tools.bench.workload import Workload, preset

        if self.preset:
            return preset(self.preset)
        return Workload(
            isl=self.isl,
            osl=self.osl,
            num_prompts=self.num_prompts,
            prefix_hit=self.cache_hit_rate or 0.0,
            vocab_size=vocab_size,
        ).validate()
