"""The port job a user writes: YAML files plus `key=value` overrides, validated by pydantic.

`load_job(["job.yaml", "budgets.builds=3"])` merges left to right. Unknown keys are errors that
name the key (and the YAML line when known); the API key itself is never part of a job, only the
name of the environment variable that holds it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from agent.tune.spec import TuneJob
from agent.yamlconf import key_lines, read_yaml
from tools.workload_spec import WorkloadSpec


class JobError(ValueError):
    """The job configuration is wrong; the message says where and what to do."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FrameworkSpec(_Section):
    """Which serving framework to port."""

    profile: str
    """A bundled profile name (sglang, vllm, tinyserve) or a path to a profile YAML."""
    repo: str | None = None
    """Git URL or local path of the framework; defaults to the profile's repo_url."""
    ref: str | None = None
    """Branch, tag or commit to port; defaults to the profile's default_ref (or the repo's HEAD)."""


class ModelSpec(_Section):
    """The checkpoint the port must load and serve."""

    path: str | None = None
    """Checkpoint directory: config.json + safetensors (or an index). None skips load/serve/bench."""
    name: str | None = None
    """Served model name; defaults to the directory name."""

    @field_validator("path")
    @classmethod
    def _absolute(cls, value: str | None) -> str | None:
        # the sandbox mounts the checkpoint at the same absolute path it has here
        return str(Path(value).expanduser().resolve()) if value else value


class TargetSpec(_Section):
    """The AMD target."""

    arch: str = "gfx942"
    """gfx architecture the ROCm build is compiled for (gfx90a, gfx942, gfx950)."""
    image: str | None = None
    """Container image for the docker sandbox; defaults to the profile's first image."""

    @field_validator("arch")
    @classmethod
    def _gfx_name(cls, value: str) -> str:
        if not re.fullmatch(r"gfx[0-9][0-9a-f]{2,3}(:[a-z]+[+-])*", value):
            raise ValueError(
                f"{value!r} is not a gfx target name: use e.g. gfx90a (MI250), gfx942 (MI300X), "
                "gfx950 (MI355X)"
            )
        return value


class SandboxSpec(_Section):
    """Where commands run."""

    backend: Literal["docker", "local"] = "docker"
    network: bool = False
    """Give the docker sandbox a network (the daemon's bridge). Off by default: builds run with no network
    and the model server is reached through a published loopback port."""
    compile_cache: Literal["shared", "run"] = "shared"
    """shared: the run's compile cache starts from what earlier runs on this machine compiled (per image,
    under $ROCPORT_HOME/compile-cache, or $ROCPORT_SHARED_COMPILE_CACHE), so a build recompiles only what
    changed; a run that consulted an LLM reads it and adds nothing. run: each run starts empty."""


class Budgets(_Section):
    """Limits that end a run cleanly with a partial report."""

    iterations: int = Field(8, ge=1)
    """Propose/apply rounds."""
    builds: int = Field(6, ge=1)
    """Full builds."""
    launches: int = Field(2, ge=0)
    """Server launches."""
    llm_tokens: int = Field(200_000, ge=0)
    """LLM tokens, prompt plus completion."""
    usd: float | None = Field(None, ge=0)
    """LLM spend; only enforceable when prices are configured."""
    wall_time_s: float = Field(4 * 3600, gt=0)
    """Wall-clock time of the whole run, resumes included."""


class LLMSpec(_Section):
    """An OpenAI-compatible endpoint for the failures no rule fixes."""

    base_url: str | None = None
    """Endpoint URL; falls back to $OPENAI_BASE_URL. None and no env: the run is rules-only."""
    model: str | None = None
    """Model name as the endpoint knows it."""
    api_key_env: str = "OPENAI_API_KEY"
    """Name of the environment variable holding the key; the key is never stored."""
    price_in_per_mtok: float | None = None
    """USD per million prompt tokens; unknown means cost is reported as unknown."""
    price_out_per_mtok: float | None = None
    max_turns: int = Field(12, ge=1)
    """Hard cap on tool-calling turns per failure."""

    def endpoint(self) -> str | None:
        """The configured endpoint URL, or None for a rules-only run."""
        return self.base_url or os.environ.get("OPENAI_BASE_URL") or None


class ServeSpec(_Section):
    """How the server is launched for validation."""

    tp: int = Field(1, ge=1)
    dp: int = Field(1, ge=1)
    port: int | None = Field(None, ge=1, le=65535)
    """Fixed port (1-65535, free when the run starts); None picks a free one."""
    extra_args: str = ""
    """Flags appended to the profile's launch command (e.g. a framework-specific server option)."""


class BenchSpec(WorkloadSpec):
    """The benchmark workload run against the ported server (tools.bench.spec declares its keys)."""

    enabled: bool = True


class PortJob(_Section):
    """One port: a framework at a ref, a model, a target, and the limits of the attempt."""

    framework: FrameworkSpec
    model: ModelSpec = Field(default_factory=ModelSpec)
    target: TargetSpec = Field(default_factory=TargetSpec)
    sandbox: SandboxSpec = Field(default_factory=SandboxSpec)
    budgets: Budgets = Field(default_factory=Budgets)
    llm: LLMSpec = Field(default_factory=LLMSpec)
    serve: ServeSpec = Field(default_factory=ServeSpec)
    bench: BenchSpec = Field(default_factory=BenchSpec)
    tune: TuneJob = Field(default_factory=TuneJob)
    """After a green port, search the serving configuration (`rocport tune`)."""
    strategy: Literal["rules+llm", "rules", "llm", "naive", "none"] = "rules+llm"
    """Who proposes patches: rules then the LLM (when configured), one of them alone, `naive` (rules+LLM,
    but one patch at a time, each proven only by a full rebuild or relaunch: the eval baseline), or
    `none` (validate only: build, load, serve, bench without patching)."""
    until: Literal["scan", "unit", "build", "load", "serve", "bench"] | None = None
    """Stop after this stage (scan; unit = the image preflight; build; load; serve; bench = everything)."""


def _parse_value(text: str) -> Any:
    """`-c budgets.builds=3` -> 3; YAML scalars so numbers, booleans and null work."""
    try:
        return yaml.safe_load(text) if text != "" else ""
    except yaml.YAMLError:
        return text


def _set_dotted(data: dict, key: str, value: Any) -> None:
    parts = key.split(".")
    node = data
    for part in parts[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child
    node[parts[-1]] = value


def _merge(base: dict, extra: dict) -> dict:
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            _merge(base[key], value)
        else:
            base[key] = value
    return base


def _read_yaml(path: Path) -> tuple[dict, dict[tuple[str, ...], int]]:
    if not path.is_file():
        raise JobError(f"job file {path} not found: pass an existing YAML file or key=value")
    data, node = read_yaml(path, error=JobError, what="a job file (framework:, model:, ...)")
    return data, key_lines(node)


def load_job(sources: list[str]) -> PortJob:
    """Build a PortJob from YAML paths and `dotted.key=value` overrides, applied left to right."""
    data: dict = {}
    origins: dict[tuple[str, ...], str] = {}
    for source in sources:
        if "=" in source and not Path(source).is_file():
            key, _, raw = source.partition("=")
            key = key.strip()
            if not key:
                raise JobError(f"override {source!r} has no key: write section.key=value")
            _set_dotted(data, key, _parse_value(raw))
            origins[tuple(key.split("."))] = f"override {source!r}"
            continue
        path = Path(source)
        loaded, lines = _read_yaml(path)
        _merge(data, loaded)
        origins.update({k: f"{path} line {n}" for k, n in lines.items()})
    return validate_job(data, origins)


def validate_job(data: dict, origins: dict[tuple[str, ...], str] | None = None) -> PortJob:
    """Validate a plain dict; errors name the dotted key and where it came from."""
    try:
        return PortJob.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = tuple(str(p) for p in err["loc"])
        where = (origins or {}).get(loc)
        suffix = f" ({where})" if where else ""
        if err["type"] == "extra_forbidden":
            raise JobError(
                f"unknown key {'.'.join(loc)}{suffix}: check the spelling; "
                f"see agent/config.py for the keys a job accepts"
            ) from exc
        if err["type"] == "missing":
            raise JobError(
                f"missing key {'.'.join(loc)}: set it in the job YAML or with -c {'.'.join(loc)}=..."
            ) from exc
        raise JobError(f"{'.'.join(loc)}{suffix}: {err['msg']}") from exc


def job_to_yaml(job: PortJob) -> str:
    """The job as YAML, for the run directory (it holds no secrets: only the key's env name)."""
    return yaml.safe_dump(job.model_dump(mode="json"), sort_keys=False)
