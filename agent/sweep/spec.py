"""The sweep matrix a user writes: frameworks@refs x models x targets x workloads, plus options."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from tools.workload_spec import WorkloadSpec


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FrameworkAxis(_Strict):
    """One framework and the refs to test each night."""

    name: str
    """Short name used in cell keys."""
    profile: str
    """Profile name (sglang, vllm, tinyserve) or a path to a profile YAML."""
    repo: str | None = None
    """Git URL or local path (defaults to the profile's repo_url); `bundled:tinyserve` is rocport's fixture
    framework, made a git repo with branch main and tag v0.1 under $ROCPORT_HOME/fixtures."""
    refs: list[str] = Field(default_factory=lambda: ["main"], min_length=1)
    """Tags, branches or commits; `main@nightly` means the tip of main when the night runs."""


class ModelAxis(_Strict):
    """A checkpoint directory to load and serve."""

    name: str
    path: str
    """The checkpoint directory; `$ROCPORT_HOME` and `~` are expanded."""
    fixture: Literal["tinyserve"] | None = None
    """Write a random-weight checkpoint of this fixture framework at `path` when none is there."""
    fixture_args: list[str] = Field(default_factory=list)
    """Extra arguments of `python3 -m tinyserve.make_checkpoint` (e.g. ["--seed", "7"])."""


class TargetAxis(_Strict):
    """A container image and the gfx target built in it."""

    image: str
    arch: str = "gfx942"
    name: str | None = None
    """Short name for cell keys; defaults to <arch>."""

    @property
    def key(self) -> str:
        return self.name or self.arch


class WorkloadAxis(WorkloadSpec):
    """A named benchmark workload of the matrix (tools.bench.spec declares the rest of its keys)."""

    name: str


class CellOptions(_Strict):
    """What each cell does."""

    mode: Literal["validate", "port"] = "validate"
    """validate: build + load + serve + bench, no patching; port: the full port loop."""
    strategy: Literal["rules", "rules+llm"] = "rules"
    builds: int = Field(4, ge=1)
    """Build budget per port cell."""
    launches: int = Field(1, ge=0)
    """Server launch budget per cell."""
    cpus: float = Field(1, gt=0)
    """CPUs a cell needs (Ray resource request)."""


class SweepSpec(_Strict):
    """A nightly compatibility matrix."""

    name: str
    frameworks: list[FrameworkAxis] = Field(min_length=1)
    models: list[ModelAxis] = Field(min_length=1)
    targets: list[TargetAxis] = Field(min_length=1)
    workloads: list[WorkloadAxis] = Field(min_length=1)
    options: CellOptions = Field(default_factory=CellOptions)
    history_nights: int = Field(7, ge=2)
    """How many past nights the throughput regression baseline uses."""
