"""bf16/fp16/fp8 type-name rule: typedefs of the HIP types under USE_ROCM, built for gfx942 and gfx950."""

from __future__ import annotations

from agent.proposers.rules import Workspace, propose_for
from tests.agent.rules.helpers import declines, failure, image_toolchains, propose, validate

BF16 = """#include <cuda_runtime.h>
#include <cuda_bf16.h>

__global__ void to_bf16(const float* x, __nv_bfloat16* y) { y[threadIdx.x] = __float2bfloat16(x[threadIdx.x]); }
"""
FP8 = """#ifdef USE_ROCM
#include <hip/hip_runtime.h>
#include <hip/hip_fp8.h>
#else
#include <cuda_runtime.h>
#include <cuda_fp8.h>
#endif

__device__ float roundtrip(float v) { __nv_fp8_e4m3 q(v); return float(q); }
__global__ void quant(float* x) { x[threadIdx.x] = roundtrip(x[threadIdx.x]); }
"""


def _again(root, fail):
    return propose_for(fail, Workspace(root=root)).proposals


def test_bf16_typedef_uses_hip_bfloat16_and_builds_for_both_targets(git_repo, rocm_image, nvcc):
    root = git_repo({"csrc/cast.cu": BF16})
    fail = failure("bf16_type", "csrc/cast.cu", "__nv_bfloat16")
    prop = propose(root, fail)
    assert "+typedef __hip_bfloat16 __nv_bfloat16;" in prop.diff and " hip_bfloat16" not in prop.diff
    for arch in ("gfx942", "gfx950"):
        outcome = validate(root, image_toolchains(root, rocm_image, arch), prop, fail)
        assert outcome.kept, outcome.reason
        assert any(c.name == f"hipcc {arch} csrc/cast.cu" and c.detail == "compiles" for c in outcome.checks)
        if arch == "gfx942":
            (root / "csrc/cast.cu").write_text(BF16)
    assert not _again(root, fail)


def test_fp8_keeps_the_ocp_encoding_and_builds_for_both_targets(git_repo, rocm_image, nvcc):
    """gfx942's fp8 is FNUZ: the CUDA type becomes the compat header's OCP byte, never HIP's FNUZ type."""
    root = git_repo({"csrc/q.cu": FP8})
    fail = failure("fp8_type", "csrc/q.cu", "__nv_fp8_e4m3")
    prop = propose(root, fail)
    assert (
        "+typedef rocm_compat_fp8_ocp<3, 7, 0x7eu> __nv_fp8_e4m3;" in prop.diff and "_fnuz" not in prop.diff
    )
    for arch in ("gfx942", "gfx950"):
        outcome = validate(root, image_toolchains(root, rocm_image, arch), prop, fail)
        assert outcome.kept, outcome.reason
        assert all(c.ok for c in outcome.checks), [c.detail for c in outcome.checks]
        if arch == "gfx942":
            (root / "csrc/q.cu").write_text(FP8)
            (root / "csrc/rocm_compat.h").unlink()
    assert not _again(root, fail)
    assert "vector" in declines(root, failure("fp8_type", "csrc/q.cu", "__nv_fp8x4_e4m3"))[0]


def test_declines_rocblas_suggestion_and_old_rocm(git_repo):
    root = git_repo({"a.cu": "int x;\n"})
    assert "rocBLAS" in declines(root, failure("bf16_type", "a.cu", "hip_bfloat16"))[0]
    assert "ROCm" in declines(root, failure("fp8_type", "a.cu", "__hip_fp8_e4m3"))[0]
