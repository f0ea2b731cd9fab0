"""cuda_header: CUDA runtime headers get an `#ifdef USE_ROCM` branch with their HIP equivalents."""
from __future__ import annotations

from agent.rules.base import Decline, Workspace, make_proposal, register
from agent.rules.cpp import branches, include_of, platform_of
from agent.rules.guard import guard_includes
from tools.records import Failure, Proposal

# CUDA header -> the HIP header(s) that declare the same API.
HIP_HEADERS: dict[str, list[str]] = {
    "cuda_runtime.h": ["hip/hip_runtime.h"],
    "cuda_runtime_api.h": ["hip/hip_runtime_api.h"],
    "device_launch_parameters.h": ["hip/hip_runtime.h"],
    "cuda_bf16.h": ["hip/hip_bf16.h"],
    "cuda_fp16.h": ["hip/hip_fp16.h"],
    "cuda_fp8.h": ["hip/hip_fp8.h"],
    "cooperative_groups.h": ["hip/hip_cooperative_groups.h"],
    "curand_kernel.h": ["hiprand/hiprand_kernel.h"],
    "curand.h": ["hiprand/hiprand.h"],
}
# Headers with no 1:1 HIP header: the code using them needs a human (or the LLM).
NO_EQUIVALENT = {
    "cuda.h": "cuda.h is the CUDA driver API; HIP has no 1:1 header (hip_runtime covers only part of it)",
    "cudaTypedefs.h": "cudaTypedefs.h declares driver-API entry-point typedefs with no HIP counterpart",
    "mma.h": "mma.h is the tensor-core WMMA API; ROCm needs rocWMMA or an MFMA rewrite",
    "cuda_pipeline.h": "cuda_pipeline.h (cp.async pipelines) has no HIP equivalent",
}
ROCM_PREFIXES = ("hip/", "hipcub/", "rocprim/", "hiprand/", "rocrand/", "hipblas", "rocblas", "hip_")


def hip_lines(headers: list[str]) -> list[str]:
    return [f"#include <{h}>" for h in headers]


def target_file(failure: Failure) -> str:
    """The repo-relative file whose #include must change (the header, else the unit)."""
    rel = failure.file or failure.facts.get("unit")
    if not rel:
        raise Decline("the failure names no file to patch")
    return rel


def unguarded(text: str, header: str) -> bool:
    """True when `header` is #included somewhere both toolchains compile."""
    lines = text.splitlines()
    stacks = branches(lines)
    return any(include_of(ln) == header and platform_of(stacks[i]) == "both" for i, ln in enumerate(lines))


class CudaHeaderFixer:
    """Guard CUDA runtime/type headers with their HIP equivalents under USE_ROCM."""

    family = "headers"
    kinds = ("cuda_header",)

    def propose(self, failure: Failure, ws: Workspace) -> Proposal | None:
        header = (failure.symbol or "").strip()
        if header.startswith(ROCM_PREFIXES):
            raise Decline(f"{header} is a HIP/ROCm header: the ROCm toolchain or image lacks it "
                          f"(update ROCm or the image); the code is not wrong", environment=True)
        if header in NO_EQUIVALENT:
            raise Decline(NO_EQUIVALENT[header])
        if header not in HIP_HEADERS:
            return None
        rel = target_file(failure)
        text = ws.read(rel)
        if text is None or not unguarded(text, header):
            return None
        replacements = {h: hip_lines(hips) for h, hips in HIP_HEADERS.items()}
        new = guard_includes(text, replacements)
        return make_proposal(failure, self.family, {rel: (text, new)},
                             f"{rel}: include the HIP equivalents of the CUDA headers under `#ifdef USE_ROCM`; "
                             f"the CUDA branch keeps the original #include lines unchanged.")


register(CudaHeaderFixer())
