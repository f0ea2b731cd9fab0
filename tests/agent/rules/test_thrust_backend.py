"""Thrust calls on the CUDA backend's policies (`thrust::cuda::par.on(stream)`) run on rocThrust's HIP backend."""

from __future__ import annotations

from agent.proposers.rules import Workspace, propose_for
from tests.agent.rules.helpers import failure, image_toolchains, propose, validate

UNIT = """#ifdef USE_ROCM
#include <hip/hip_runtime.h>
typedef hipStream_t cudaStream_t;
#else
#include <cuda_runtime.h>
#endif
#include <thrust/device_ptr.h>
#include <thrust/execution_policy.h>
#include <thrust/sort.h>

// Sorts the scores of a batch by key on the caller's stream.
void sort_scores(int* keys, float* scores, int n, cudaStream_t stream) {
  thrust::sort_by_key(thrust::cuda::par.on(stream), keys, keys + n, scores);
  thrust::device_ptr<float> p(scores);
  thrust::sort(thrust::cuda::par_nosync.on(stream), p, p + n);
}
"""


def test_thrust_cuda_policies_run_on_the_hip_backend(git_repo, rocm_image, nvcc):
    root = git_repo({"csrc/unit.cu": UNIT})
    fail = failure("cuda_std", "csrc/unit.cu", "thrust::cuda", "no member named 'cuda' in namespace 'thrust'")
    outcome = validate(root, image_toolchains(root, rocm_image, "gfx942"), propose(root, fail), fail)
    assert outcome.kept, outcome.reason
    assert all(c.ok for c in outcome.checks), [c.detail for c in outcome.checks]  # hipcc, nvcc, CUDA -E
    assert "namespace cuda = ::thrust::hip;" in (root / "csrc/rocm_compat.h").read_text()
    assert not propose_for(fail, Workspace(root=root)).proposals
