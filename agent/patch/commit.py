"""The commit message of one kept patch, the same for the port loop and `rocport fix`: a subject that
says what was fixed where, the failure it removes, the rationale, and the checks that prove it. Both
commit it with tools.git.commit_files (exactly the proposal's files)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tools import git as gitops
from tools.records import Failure, Proposal

WHAT = {
    "headers": "Guard CUDA headers for ROCm",
    "cub": "Use hipCUB on ROCm",
    "cuda_std": "Use std traits on ROCm",
    "types": "Map CUDA low-precision types to HIP",
    "warp": "Route warp intrinsics through the compat header",
    "warp_size": "Derive warp-size literals from WARP_SIZE",
    "python_imports": "Guard CUDA-only import",
    "weight_names": "Remap checkpoint weight names",
    "quant_exclusion": "Remap quantization exclusions",
    "runtime_api": "Map CUDA runtime API names to HIP",
    "coop_groups": "Add cg::reduce for ROCm",
    "ptx": "Rewrite inline PTX for ROCm",
    "implicit_runtime": "Include the HIP runtime on ROCm",
    "grid_constant": "Define __grid_constant__ away on ROCm",
    "libcudacxx_atomic": "Implement cuda::atomic on ROCm",
    "driver_api": "Map the CUDA driver API to HIP",
    "cudacc": "Let __CUDACC__ tests accept hipcc",
    "cudacc_qualifier": "Keep __CUDACC__-qualified helpers device-callable on ROCm",
    "launch_syntax": "Join split kernel-launch chevrons",
    "exec_space": "Keep out-of-class member definitions __host__ __device__ on ROCm",
}
"""Commit subjects by rule family; an LLM patch (or an unnamed family) says `Fix <kind>`."""


def commit_message(failure: Failure, proposal: Proposal, checks: Iterable[Any]) -> str:
    """Subject: what was fixed where. Body: the failure it removes, the rationale and the evidence."""
    family = proposal.proposer.removeprefix("rule:") if proposal.proposer.startswith("rule:") else ""
    where = failure.file or (proposal.files[0] if proposal.files else "the repo")
    subject = f"{WHAT.get(family, 'Fix ' + failure.kind)} in {where}"
    return gitops.patch_commit_message(subject, failure.to_dict(), proposal.rationale, checks)
