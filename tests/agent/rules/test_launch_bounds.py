"""`__launch_bounds__` with CUDA 12's third argument (max blocks per cluster) compiles on ROCm with the
attributes of its two-argument form; the CUDA side keeps all three."""

from __future__ import annotations

from agent.proposers.rules import Workspace, propose_for
from tests.agent.rules.helpers import device_code, failure, image_toolchains, propose, validate

UNIT = """#ifdef USE_ROCM
#include <hip/hip_runtime.h>
#else
#include <cuda_runtime.h>
#endif

// A Hopper-tuned copy kernel, bounded for 256 threads and 2 resident blocks (and 1 block per cluster).
__global__ void __launch_bounds__(256, 2, 1) copy3(const float* in, float* out) {
  out[blockIdx.x * 256 + threadIdx.x] = in[blockIdx.x * 256 + threadIdx.x];
}

__global__ void __launch_bounds__(128) copy1(const float* in, float* out) { out[threadIdx.x] = in[threadIdx.x]; }
"""


def test_three_argument_launch_bounds_keep_the_two_argument_attributes(git_repo, rocm_image, nvcc):
    root = git_repo({"csrc/unit.cu": UNIT})
    fail = failure("compile_error", "csrc/unit.cu", "", "expected unqualified-id")
    fail.line = 8
    outcome = validate(root, image_toolchains(root, rocm_image, "gfx942"), propose(root, fail), fail)
    assert outcome.kept, outcome.reason
    assert all(c.ok for c in outcome.checks), [c.detail for c in outcome.checks]  # hipcc, nvcc, CUDA -E
    ir = device_code(root, rocm_image, "-S -emit-llvm")
    assert '"amdgpu-flat-work-group-size"="1,256"' in ir and '"amdgpu-waves-per-eu"="2,8"' in ir
    assert '"amdgpu-flat-work-group-size"="1,128"' in ir  # the one-argument form is HIP's own
    assert not propose_for(fail, Workspace(root=root)).proposals


def test_an_unrelated_parse_error_is_left_alone(git_repo):
    root = git_repo({"csrc/unit.cu": "__global__ void __launch_bounds__(256, 2) k(float* o) { o[0] = 1 }\n"})
    fail = failure("compile_error", "csrc/unit.cu", "", "expected ';' after expression")
    fail.line = 1
    assert not propose_for(fail, Workspace(root=root)).proposals
