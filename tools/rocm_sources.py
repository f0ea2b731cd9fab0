"""Where a framework's own build lists the sources it compiles for ROCm: the part of a framework profile
that `rocport scan` reads (tools/scan/rocm_build.py), declared here so tools need nothing of agent/."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class RocmSources(BaseModel):
    """Where the framework's own build lists the sources it compiles for ROCm (read by `rocport scan`)."""

    model_config = ConfigDict(extra="forbid")
    cmake: str | None = None
    """A CMakeLists.txt (repo-relative) whose target sources, under `variables`, are the ROCm build."""
    variables: dict[str, str] = Field(default_factory=dict)
    """CMake variables the ROCm build sets (vLLM: VLLM_GPU_LANG=HIP)."""
    cuda_variables: dict[str, str] = Field(default_factory=dict)
    """The CUDA build's variables: a unit only the ROCm build lists is ROCm-only code (no findings)."""
    setup_py: str | None = None
    """A setup script (repo-relative) whose source-file literals are the ROCm build (sgl-kernel)."""
