"""What can be tuned: the profile's `tune:` section (the framework's serving space) and the job's
`tune:` section (this search's limits, workload scale, prices). Both are user-written YAML."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Switch(_Strict):
    """One serving switch: a launch flag and/or environment variables, and the values to try."""

    name: str
    """Short name in tables (e.g. attention_backend)."""
    values: list[str | int | float | bool]
    """Values to try; the first is where the search starts (`default` leaves the flag/variable out)."""
    arg: str | None = None
    """Launch-flag template with {value}, e.g. `--attention-backend {value}`; an empty render adds nothing."""
    env: dict[str, str] = Field(default_factory=dict)
    """Environment templates with {value}, e.g. {SGLANG_USE_AITER: "{value}"}."""
    doc: str = ""
    """Where the switch is documented (for the reader of the profile)."""


class ParallelSpace(_Strict):
    """How a node's GPUs can be split: TP x DP replicas, optionally expert parallel inside."""

    tp: list[int]
    """Tensor-parallel sizes to try; DP is GPUs / TP (splits that do not divide the node are skipped).
    The first that divides the node is the starting point (all TP: what a first port launches)."""
    ep: Literal["none", "tp", "world"] = "none"
    """Expert parallelism: none; `tp` (MoE experts split over the TP group: EP = TP, sglang --ep-size);
    `world` (over every GPU: EP = TP x DP, vLLM --enable-expert-parallel)."""
    ep_arg: str | None = None
    """Launch flag template with {ep}, added for candidates with EP > 1."""


class MoeTuning(_Strict):
    """The framework's own fused-MoE tuning script and where its per-shape configs live."""

    command: str
    """Template run from the repo root: {model_path}, {tp}, {ep}, {out_dir}, {dtype}."""
    config_dir: str
    """Repo-relative directory the serving code reads the per-shape JSON from (files are committed there);
    `{probe}` is replaced by what config_dir_probe prints."""
    config_dir_probe: str | None = None
    """Command run in the sandbox whose stdout fills {probe} (e.g. the image's triton version)."""
    output_glob: str = "*.json"
    """Files the script writes into {out_dir}."""
    dtype: str = "auto"
    timeout_s: float = 7200
    doc: str = ""


class TuneSpace(_Strict):
    """The profile's serving space."""

    gpus: int = Field(8, ge=1)
    """GPUs per node searched by default (`rocport tune --gpus` overrides)."""
    parallel: ParallelSpace
    switches: list[Switch] = Field(default_factory=list)
    base_args: str = ""
    """Flags added to every candidate's launch (e.g. the fixture's simulated device timings)."""
    moe_tuning: MoeTuning | None = None


class TuneJob(_Strict):
    """The job's `tune:` section: continue a green port into a serving-configuration search."""

    enabled: bool = False
    """Run `rocport tune` on the run once the port is green."""
    gpus: int | None = Field(None, ge=1)
    """GPUs per node; None: the profile's tune.gpus."""
    preset: str | None = None
    """A tools.bench preset to tune on (e.g. glm52-mi355x); None: the job's bench section."""
    workload_scale: float = Field(1.0, gt=0, le=1)
    """Scale the bench workload's ISL/OSL (e.g. glm52-mi355x at 0.016 is 320 in, 16 out on the fixture)."""
    num_prompts: int | None = Field(None, ge=1)
    """Measured requests per repeat; None: the bench section's."""
    prefix_groups: int | None = Field(None, ge=1)
    """Prefix groups of the workload (each is primed before measuring); None: the preset's."""
    max_concurrency: int | None = Field(None, ge=1)
    repeats: int = Field(3, ge=1)
    """Full measurements per candidate (fresh prompts each); the median is kept."""
    probe_prompts: int | None = Field(None, ge=1)
    """Requests of the short probe that can stop a candidate early; None: the concurrency."""
    early_stop_slack: float = Field(0.25, ge=0)
    """A candidate whose probe throughput x (1 + slack) is below the incumbent's probe is stopped."""
    wall_budget_s: float = Field(3600, gt=0)
    """No new candidate is launched past this wall time."""
    slo_ttft_ms: float | None = None
    slo_tpot_ms: float | None = None
    price_per_gpu_hour: float | None = Field(None, ge=0)
    reference: list[str] = Field(default_factory=list)
    """Reference rows `NAME:TOKENS_PER_S_PER_NODE[:PRICE_PER_GPU_HOUR[:GPUS]]`, e.g. B200:3192:6.5."""
    moe_configs: bool = True
    """Run the profile's MoE tuning script (when it declares one) and commit the configs."""
    verify: bool = True
    """Relaunch the chosen configuration once and report how close its throughput comes."""
    exhaustive: bool = False
    """Also launch every candidate (no early stop) and show both searches side by side: the check
    that the cheaper search found the best."""
