"""Cache-hinted loads/stores, address-space queries and __nanosleep, which HIP does not declare, get ROCm
definitions of the same meaning in the compat header."""

from __future__ import annotations

from agent.proposers.rules import Workspace, propose_for
from tests.agent.rules.helpers import declines, device_code, failure, image_toolchains, propose, validate

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


def test_trap_and_byte_dot_products_keep_cuda_results(git_repo, rocm_image, nvcc):
    """__dp4a sums the four signed (or unsigned) byte products into c: the constants fold to CUDA's values."""
    unit = """#include <cuda_runtime.h>

__global__ void k(int* s, unsigned* u) {
  s[0] = __dp4a(int(0x80FF0102), int(0x7F020304), 5);
  u[0] = __dp4a(0x80FF0102u, 0x7F020304u, 5u);
  if (s[1] < 0) __trap();
}
"""
    root = git_repo(
        {"csrc/unit.cu": unit.replace("#include <cuda_runtime.h>\n", HEADER.split("\n\n")[0] + "\n")}
    )
    fail = failure("compile_error", "csrc/unit.cu", "__dp4a", "use of undeclared identifier '__dp4a'")
    outcome = validate(root, image_toolchains(root, rocm_image, "gfx942"), propose(root, fail), fail)
    assert outcome.kept, outcome.reason
    assert all(c.ok for c in outcome.checks), [c.detail for c in outcome.checks]
    ir = device_code(root, rocm_image, "-S -emit-llvm")
    assert "i32 -16242" in ir and "i32 16782" in ir  # 8 + 3 - 2 - 128 * 127 + 5; 8 + 3 + 510 + 128 * 127 + 5
    assert "llvm.trap" in ir
    assert not propose_for(fail, Workspace(root=root)).proposals


def test_texture_fetches_are_declined_for_cdna(git_repo):
    root = git_repo(
        {
            "csrc/unit.cu": "__global__ void k(float* o, unsigned long long t) { o[0] = tex1Dfetch<float>(t, 0); }\n"
        }
    )
    fail = failure(
        "compile_error",
        "csrc/unit.cu",
        "tex1Dfetch<float, nullptr>",
        "'tex1Dfetch<float, nullptr>' is unavailable: The image/texture API not supported on the device",
    )
    assert any("image instructions" in d for d in declines(root, fail))
