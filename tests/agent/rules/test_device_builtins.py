"""Cache-hinted loads/stores, address-space queries and __nanosleep, which HIP does not declare, get ROCm
definitions of the same meaning in the compat header."""

from __future__ import annotations

from agent.proposers.rules import Workspace, propose_for
from tests.agent.rules.helpers import device_code, failure, image_toolchains, propose, validate

HEADER = """#pragma once
#ifdef USE_ROCM
#include <hip/hip_runtime.h>
#else
#include <cuda_runtime.h>
#endif

// Streams a row once, marks a spin flag and backs off while a peer is busy.
__device__ inline float4 stream_row(const float4* row, float* sink) {
  __stcs(sink, 0.f);
  return __ldcs(row) ;
}

__device__ inline void back_off(const volatile int* busy) {
  while (*busy) __nanosleep(200);
}

__device__ inline unsigned lds_offset(const void* p) {
  return __isShared(p) ? unsigned(__cvta_generic_to_shared(p)) : 0u;
}
"""
UNIT = """#include "stream.cuh"

__global__ void k(const float4* rows, float4* out, float* sink, const int* busy, unsigned* offs) {
  __shared__ float tile[64];
  tile[threadIdx.x] = sink[threadIdx.x];
  out[threadIdx.x] = stream_row(rows + threadIdx.x, sink + 64);
  back_off(busy);
  offs[threadIdx.x] = lds_offset(&tile[threadIdx.x]);
}
"""


def test_cache_hints_address_spaces_and_sleep_compile_on_both(git_repo, rocm_image, nvcc):
    root = git_repo({"csrc/stream.cuh": HEADER, "csrc/unit.cu": UNIT})
    fail = failure("compile_error", "csrc/stream.cuh", "__stcs", "use of undeclared identifier '__stcs'")
    fail.facts["unit"] = "csrc/unit.cu"
    prop = propose(root, fail)
    outcome = validate(root, image_toolchains(root, rocm_image, "gfx942"), prop, fail)
    assert outcome.kept, outcome.reason
    assert all(c.ok for c in outcome.checks), [c.detail for c in outcome.checks]  # hipcc, nvcc, CUDA -E
    compat = (root / "csrc/rocm_compat.h").read_text()
    for name in ("__stcs", "__ldcs", "__nanosleep", "__isShared", "__cvta_generic_to_shared"):  # all at once
        assert f" {name}(" in compat, name
    assert "__isGlobal" not in compat  # only what the file uses
    assert "s_sleep 1" in device_code(root, rocm_image, "-S")
    assert not propose_for(fail, Workspace(root=root)).proposals  # a second run adds nothing


def test_a_coherence_load_is_not_turned_into_a_plain_one(git_repo):
    root = git_repo({"csrc/stream.cuh": "__device__ int f(const int* p) { return __ldcv(p); }\n"})
    fail = failure("compile_error", "csrc/stream.cuh", "__ldcv", "use of undeclared identifier '__ldcv'")
    assert not propose_for(fail, Workspace(root=root)).proposals
