"""warp_intrinsic rule: one compat header per repo, 32-lane semantics kept, proven with real compilers."""

from __future__ import annotations

import pytest

from agent.proposers.rules import Workspace, propose_for
from tests.agent.rules.helpers import declines, failure, host_toolchains, image_toolchains, propose, validate

REDUCE = """#include <cstdint>

__device__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffff, v, offset);
  return v;
}

__global__ void row_sum(const float* x, float* out, unsigned* any_neg) {
  float v = warp_sum(x[threadIdx.x]);
  unsigned neg = __ballot_sync(__activemask(), v < 0.f);
  __syncwarp();
  if (threadIdx.x % 32 == 0) { out[threadIdx.x / 32] = v; any_neg[threadIdx.x / 32] = neg; }
}
"""
GENERIC = """__global__ void bcast(float* x) {
  float v = x[threadIdx.x];
  v = __shfl_sync(0xffffffff, v, 0, warpSize);
  x[threadIdx.x] = v + __shfl_down_sync(0xffffffff, v, 1) + __ldg(&x[0]);
}
"""


def _again(root, fail):
    return propose_for(fail, Workspace(root=root)).proposals


def test_32_lane_kernel_gets_warp32_macros_and_one_compat_header(git_repo):
    root = git_repo({"csrc/reduce/sum.cu": REDUCE})
    prop = propose(root, failure("warp_intrinsic", "csrc/reduce/sum.cu", "__shfl_xor_sync"))
    assert prop.files == ["csrc/reduce/sum.cu", "csrc/rocm_compat.h"]
    assert (
        "+  for (int offset = 16; offset > 0; offset /= 2) v += WARP32_SHFL_XOR(0xffffffff, v, offset);"
        in prop.diff
    )
    assert "WARP32_BALLOT(WARP32_ACTIVEMASK(), v < 0.f)" in prop.diff and "+  WARP_SYNC();" in prop.diff
    assert '+#include "../rocm_compat.h"' in prop.diff
    assert "__shfl_xor(var, lane_mask, 32)" in prop.diff  # explicit width 32 on ROCm
    assert "WARP_SHFL_DOWN" not in prop.diff  # only the macros this kernel needs
    assert "only proven by running the kernel" in prop.rationale


@pytest.mark.slow
def test_warp_fix_compiles_everywhere_and_cuda_tokens_unchanged(git_repo, hipcc, nvcc, rocm_image):
    root = git_repo({"csrc/reduce/sum.cu": REDUCE, "csrc/bcast.cu": GENERIC})
    fail = failure("warp_intrinsic", "csrc/reduce/sum.cu", "__shfl_xor_sync")
    prop = propose(root, fail, "gfx90a")
    outcome = validate(root, host_toolchains(root), prop, fail)
    assert outcome.kept, outcome.reason
    assert [c.detail for c in outcome.checks if c.name.startswith("hipcc")] == ["compiles"]
    for arch in ("gfx942", "gfx950"):
        tools = image_toolchains(root, rocm_image, arch)
        tools.cuda = None
        assert [c.ok for c in _compile(root, tools, "csrc/reduce/sum.cu")] == [True]
    # The second kernel reuses the header, adding only the macros it needs; width kept as written.
    fail2 = failure("warp_intrinsic", "csrc/bcast.cu", "__shfl_sync")
    prop2 = propose(root, fail2, "gfx90a")
    assert (
        prop2.files == ["csrc/bcast.cu", "csrc/rocm_compat.h"] and '+#include "rocm_compat.h"' in prop2.diff
    )
    assert (
        prop2.diff.count("new file mode") == 0 and prop2.diff.count("+#define WARP_SHFL_DOWN(mask, ...)") == 2
    )
    assert "+#define WARP32_SHFL_XOR" not in prop2.diff
    assert "WARP_SHFL(0xffffffff, v, 0, warpSize)" in prop2.diff and "COMPAT_LDG(&x[0])" in prop2.diff
    assert "WARP_SHFL_DOWN(0xffffffff, v, 1)" in prop2.diff  # warpSize-generic: hardware width
    outcome2 = validate(root, host_toolchains(root), prop2, fail2)
    assert outcome2.kept, outcome2.reason
    assert not _again(root, fail) and not _again(root, fail2)


def _compile(root, tools, unit):
    from agent.patch.validate import Validator, compile_hip_units

    return Validator(root, tools)._hip([unit], None, compile_hip_units(tools, root, [unit]))


def test_declines_intrinsics_without_hip_equivalent(git_repo):
    root = git_repo({"a.cu": "int x;\n"})
    assert "no HIP intrinsic" in declines(root, failure("warp_intrinsic", "a.cu", "__match_any_sync"))[0]


def test_tensor_core_ptx_is_declined_with_reason(git_repo):
    mma = (
        "__device__ void f(unsigned* d, unsigned* a) {\n"
        '  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0}, {%1};" : "=r"(d[0]) : "r"(a[0]));\n'
        "}\n"
    )
    root = git_repo({"mma.cu": mma})
    fail = failure("inline_ptx", "mma.cu", "asm", message="error: invalid instruction")
    fail.line = 2
    reason = declines(root, fail)[0]
    assert "mma.sync" in reason and "MFMA" in reason


OWN_COMPAT = """// The repo's own compat header.
#pragma once
#ifdef USE_ROCM
#include <hip/hip_runtime.h>
#define WARP_SIZE 64
#define MY_SHFL_XOR(mask, var, lane_mask) __shfl_xor((var), (lane_mask), WARP_SIZE)
#else
#include <cuda_runtime.h>
#define WARP_SIZE 32
#define MY_SHFL_XOR(mask, var, lane_mask) __shfl_xor_sync((mask), (var), (lane_mask))
#endif
"""
GATE = """#include "compat.h"

__global__ void gate(float* x) {
  float v = x[threadIdx.x];
  for (int offset = WARP_SIZE / 2; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffff, v, offset));
  x[threadIdx.x] = v;
}
"""


def test_extends_the_repos_own_compat_header(git_repo, hipcc, nvcc):
    root = git_repo({"csrc/compat.h": OWN_COMPAT, "csrc/gate.cu": GATE})
    fail = failure("warp_intrinsic", "csrc/gate.cu", "__shfl_xor_sync")
    prop = propose(root, fail, "gfx90a")
    assert prop.files == ["csrc/compat.h", "csrc/gate.cu"]
    assert "#ifndef WARP_SIZE" not in prop.diff  # the repo's WARP_SIZE stays the one source of truth
    assert '+#include "' not in prop.diff and "WARP_SHFL_XOR(0xffffffff, v, offset)" in prop.diff
    outcome = validate(root, host_toolchains(root), prop, fail)
    assert outcome.kept, outcome.reason
    assert {c.name for c in outcome.checks} >= {
        "cuda -E identity csrc/gate.cu",
        "cuda -E identity csrc/compat.h",
        "hipcc gfx90a csrc/gate.cu",
        "nvcc csrc/gate.cu",
    }
