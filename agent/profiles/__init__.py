"""Framework profiles: how to build, check, launch and benchmark one framework (YAML beside this file)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from agent.tune.spec import TuneSpace
from agent.yamlconf import load_yaml_model
from tools.rocm_sources import RocmSources

PROFILE_DIR = Path(__file__).parent


class ProfileError(ValueError):
    """A profile is missing or malformed; the message names the file and the key."""


class BuildSpec(BaseModel):
    """Commands that build the framework's native code, run from the repo root in the sandbox."""

    model_config = ConfigDict(extra="forbid")
    rocm: str
    """Full ROCm build, keep-going so one build reveals every failing translation unit. {arch} is the gfx target."""
    cuda: str | None = None
    """Full CUDA build (nvcc), when the profile can build for CUDA."""
    timeout_s: float = 3600
    """Wall-clock limit of one full build."""


class UnitCompile(BaseModel):
    """How to compile one translation unit alone: the cheap check before any full rebuild."""

    model_config = ConfigDict(extra="forbid")
    hip: str
    """Template with {file}, {arch}, {out}; run with hipcc in the sandbox."""
    cuda: str | None = None
    """Template with {file}, {out}; run with nvcc where nvcc exists."""
    cuda_preprocess: str | None = None
    """Template with {file}: prints the CUDA preprocessor output (nvcc -E) to stdout."""
    sources: list[str] = Field(default_factory=lambda: ["csrc/**/*.cu", "csrc/**/*.cpp"])
    """Globs of the translation units."""


class LaunchSpec(BaseModel):
    """How to start the server and know it is up."""

    model_config = ConfigDict(extra="forbid")
    command: str
    """Template with {model_path}, {port}, {tp}, {dp}, {host}."""
    health_path: str = "/health"
    models_path: str = "/v1/models"
    ready_timeout_s: float = 600
    smoke_prompt: str = "The capital of France is"


class Profile(BaseModel):
    """Everything rocport needs to know about one serving framework."""

    model_config = ConfigDict(extra="forbid")
    name: str
    description: str = ""
    repo_url: str | None = None
    """Upstream git URL (for sglang/vllm); the fixture framework lives in evals/frameworks."""
    default_ref: str = "main"
    hipify_at_build: bool = False
    """True when the build runs torch's hipify (vLLM, sgl-kernel): the scanner skips what hipify renames."""
    build: BuildSpec
    unit: UnitCompile | None = None
    launch: LaunchSpec
    expected_params: str | None = None
    """Command template with {model_path}: prints the framework's expected parameter names as JSON."""
    meta_params: str | None = None
    """Framework package (sglang, vllm) whose model class `rocport weights` builds on the meta device in a
    framework venv (tools/weights/meta_model.py), then replays the real load_weights on the checkpoint."""
    load_check: str | None = None
    """Command template with {model_path}: loads the checkpoint into the model without serving
    (exit 0 = loads; otherwise its traceback is diagnosed). The cheap check before a server launch."""
    serve_needs_gpu: bool = False
    """True when loading and serving need a GPU (sglang, vLLM); without one they are 'not run: no GPU'."""
    model_loaders: list[str] = Field(default_factory=list)
    """Globs of the files whose load_weights map checkpoint names to parameters."""
    quant_configs: list[str] = Field(default_factory=list)
    """Globs of files that hold quantization exclusion lists."""
    images: list[str] = Field(default_factory=list)
    """Container images this framework is built and served in, the default first."""
    rocm_sources: RocmSources | None = None
    """How to read the ROCm build's source list: scan splits findings into compiled / not built."""
    install: str | None = None
    """Command that installs the Python side after the build (pip install -e . etc.)."""
    env: dict[str, str] = Field(default_factory=dict)
    """Environment for build and launch (PYTORCH_ROCM_ARCH, HIP_PLATFORM, ...); {arch} is substituted."""
    tune: TuneSpace | None = None
    """The serving space `rocport tune` searches (parallel splits, kernel switches, MoE tuning script)."""


def profile_names() -> list[str]:
    return sorted(p.stem for p in PROFILE_DIR.glob("*.yaml"))


def load_profile(name_or_path: str) -> Profile:
    """Load a bundled profile by name, or any profile YAML by path."""
    path = Path(name_or_path)
    if not path.suffix:
        path = PROFILE_DIR / f"{name_or_path}.yaml"
    if not path.is_file():
        raise ProfileError(
            f"no profile {name_or_path!r}: use one of {', '.join(profile_names()) or '(none)'} "
            f"or a path to a profile YAML"
        )
    return load_yaml_model(path, Profile, error=ProfileError, what="a profile YAML")
