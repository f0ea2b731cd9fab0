"""Repo helpers first: vLLM's VLLM_SHFL_XOR_SYNC* / VLLM_LDG and sglang's SGLANG_SHFL_XOR_SYNC* are learned
from the repo's own compat header and reused at call sites, proven with real hipcc + nvcc, and the CUDA
identity proof accepts their equal-valued spelling of the mask and width (and nothing else)."""

from __future__ import annotations

from agent.proposers.rules import Workspace
from agent.proposers.rules.repo_helpers import learn_helpers
from tests.agent.rules.helpers import failure, host_toolchains, propose, validate
from tools.cpp.equivalence import normalize_warp_calls, tokens

# Shaped like vLLM's csrc/core/cuda_compat.h: the helpers are defined per build under USE_ROCM.
VLLM_COMPAT = """#pragma once

#ifdef USE_ROCM
  #include <hip/hip_runtime.h>
#endif

#ifndef USE_ROCM
  #define VLLM_LDG(arg) __ldg(arg)
#else
  #define VLLM_LDG(arg) *(arg)
#endif

#ifndef USE_ROCM
  #define VLLM_SHFL_XOR_SYNC(var, lane_mask) \\
    __shfl_xor_sync(uint32_t(-1), var, lane_mask)
  #define VLLM_SHFL_XOR_SYNC_WIDTH(var, lane_mask, width) \\
    __shfl_xor_sync(uint32_t(-1), var, lane_mask, width)
#else
  #define VLLM_SHFL_XOR_SYNC(var, lane_mask) __shfl_xor(var, lane_mask)
  #define VLLM_SHFL_XOR_SYNC_WIDTH(var, lane_mask, width) \\
    __shfl_xor(var, lane_mask, width)
#endif

#ifndef USE_ROCM
  #define VLLM_SHFL_DOWN_SYNC(var, lane_delta) \\
    __shfl_down_sync(uint32_t(-1), var, lane_delta)
#else
  #define VLLM_SHFL_DOWN_SYNC(var, lane_delta) __shfl_down(var, lane_delta)
#endif
"""
TOPK = """#include <cstdint>

// 32-lane reductions, as vLLM's moe kernels write them.
__device__ float warp_max(float v) {
  for (int mask = 16; mask > 0; mask >>= 1) v = fmaxf(v, __shfl_xor_sync(0xFFFFFFFF, v, mask));
  return v;
}

__global__ void topk(const float* x, float* out) {
  float v = warp_max(__ldg(&x[threadIdx.x]));
  v += __shfl_down_sync(0xffffffff, v, 1);
  if (threadIdx.x % 32 == 0) out[threadIdx.x / 32] = v;
}
"""
GENERIC = """#include <cstdint>
#include "../core/cuda_compat.h"

__global__ void bcast(float* x) {
  float v = x[threadIdx.x];
  x[threadIdx.x] = v + __shfl_xor_sync(uint32_t(-1), v, 1) + __shfl_xor_sync(0x0000ffff, v, 2);
  if (threadIdx.x < warpSize) x[0] = v;
}
"""
# Shaped like sgl-kernel's include/utils.h: the mask is a parameter and every argument parenthesised.
SGLANG_UTILS = """#pragma once
#include <cstdint>
#ifdef USE_ROCM
#include <hip/hip_runtime.h>
#endif

#ifndef USE_ROCM
#define SGLANG_SHFL_XOR_SYNC(mask, var, lane_mask) __shfl_xor_sync((mask), (var), (lane_mask))
#define SGLANG_SHFL_XOR_SYNC_WIDTH(mask, var, lane_mask, width) __shfl_xor_sync((mask), (var), (lane_mask), (width))
#else
#define SGLANG_SHFL_XOR_SYNC(mask, var, lane_mask) __shfl_xor((var), (lane_mask))
#define SGLANG_SHFL_XOR_SYNC_WIDTH(mask, var, lane_mask, width) __shfl_xor((var), (lane_mask), (width))
#endif
"""
SGLANG_NORM = """#include "utils.h"

__global__ void group_sum(float* x) {
  float v = x[threadIdx.x];
  for (int m = 8; m > 0; m >>= 1) v += __shfl_xor_sync(0xffffffff, v, m, 16);
  if (threadIdx.x % 32 == 0) x[threadIdx.x >> 5] = v;
}
"""


def test_vllm_helpers_are_learned_from_cuda_compat():
    """Only helpers whose two bodies are the intrinsic and its HIP counterpart over the same parameters."""
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "csrc/core").mkdir(parents=True)
        odd = VLLM_COMPAT + (
            "#ifndef USE_ROCM\n#define ODD_XOR(v, m) __shfl_xor_sync(0xffffffff, v, m)\n"
            "#else\n#define ODD_XOR(v, m) __shfl_xor(v, m, 16)\n#endif\n"
            "#define CUDA_ONLY_XOR(v, m) __shfl_xor_sync(0xffffffff, v, m)\n"
        )
        (Path(d) / "csrc/core/cuda_compat.h").write_text(odd)
        learned = {h.name: h for h in learn_helpers(Workspace(root=Path(d)))}
    assert set(learned) == {
        "VLLM_LDG",
        "VLLM_SHFL_XOR_SYNC",
        "VLLM_SHFL_XOR_SYNC_WIDTH",
        "VLLM_SHFL_DOWN_SYNC",
    }
    width = learned["VLLM_SHFL_XOR_SYNC_WIDTH"]
    assert width.full_mask and width.slots == ("var", "lane", "width")


def test_32_lane_kernel_reuses_vllm_helpers_and_is_proven(git_repo, hipcc, nvcc):
    root = git_repo({"csrc/core/cuda_compat.h": VLLM_COMPAT, "csrc/moe/topk.cu": TOPK})
    fail = failure("warp_intrinsic", "csrc/moe/topk.cu", "__shfl_xor_sync")
    prop = propose(root, fail, "gfx90a")
    # 32-lane kernel: the width-taking helper with width 32; the repo's own __ldg helper; and only what
    # the repo lacks (a 32-lane shuffle-down) goes into the repo's compat header, not a new one.
    assert "VLLM_SHFL_XOR_SYNC_WIDTH(v, mask, 32)" in prop.diff
    assert "VLLM_LDG(&x[threadIdx.x])" in prop.diff
    assert "WARP32_SHFL_DOWN(0xffffffff, v, 1)" in prop.diff
    assert prop.files == ["csrc/core/cuda_compat.h", "csrc/moe/topk.cu"]
    assert '+#include "../core/cuda_compat.h"' in prop.diff and "rocm_compat.h" not in prop.diff
    outcome = validate(root, host_toolchains(root), prop, fail)
    assert outcome.kept, outcome.reason
    identity = [c.detail for c in outcome.checks if c.name.startswith("cuda -E identity csrc/moe/topk.cu")]
    assert identity and "spell equal values" in identity[0]
    assert [c.ok for c in outcome.checks if c.name.startswith("hipcc")] == [True]


def test_generic_kernel_keeps_hardware_warp_and_partial_masks(git_repo, hipcc, nvcc):
    root = git_repo({"csrc/core/cuda_compat.h": VLLM_COMPAT, "csrc/attn/bcast.cu": GENERIC})
    fail = failure("warp_intrinsic", "csrc/attn/bcast.cu", "__shfl_xor_sync")
    prop = propose(root, fail, "gfx90a")
    assert "VLLM_SHFL_XOR_SYNC(v, 1)" in prop.diff  # warpSize-generic: no width
    # A mask that is not all lanes cannot go through a helper that passes all lanes.
    assert "WARP_SHFL_XOR(0x0000ffff, v, 2)" in prop.diff
    assert prop.diff.count("#include") == 0  # cuda_compat.h already included
    outcome = validate(root, host_toolchains(root), prop, fail)
    assert outcome.kept, outcome.reason


def test_sglang_helpers_with_mask_parameter(git_repo, hipcc, nvcc):
    root = git_repo({"sgl-kernel/include/utils.h": SGLANG_UTILS, "sgl-kernel/include/norm.cuh": SGLANG_NORM})
    fail = failure("warp_intrinsic", "sgl-kernel/include/norm.cuh", "__shfl_xor_sync")
    prop = propose(root, fail, "gfx90a")
    assert "SGLANG_SHFL_XOR_SYNC_WIDTH(0xffffffff, v, m, 16)" in prop.diff
    assert prop.files == ["sgl-kernel/include/norm.cuh"]  # nothing new: the repo had what it needed
    assert "repo's own helpers" in prop.rationale


def test_own_shuffle_wrapper_is_the_only_call_site_changed(git_repo):
    own = """__device__ __forceinline__ float shuffle_xor(float v, int m) {
  return __shfl_xor_sync(0xffffffff, v, m);
}
__global__ void k(float* x) {
  float v = x[threadIdx.x];
  for (int m = 16; m > 0; m >>= 1) v += shuffle_xor(v, m);
  x[threadIdx.x] = v;
}
"""
    root = git_repo({"csrc/core/cuda_compat.h": VLLM_COMPAT, "csrc/own.cu": own})
    prop = propose(root, failure("warp_intrinsic", "csrc/own.cu", "__shfl_xor_sync"))
    changed = [ln for ln in prop.diff.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    assert changed == ['+#include "core/cuda_compat.h"', "+  return VLLM_SHFL_XOR_SYNC_WIDTH(v, m, 32);"]


def test_identity_accepts_equal_values_only():
    def same(a: str, b: str) -> bool:
        return normalize_warp_calls(tokens(a))[0] == normalize_warp_calls(tokens(b))[0]

    assert same("__shfl_xor_sync(0xffffffff, v, m)", "__shfl_xor_sync(uint32_t(-1), v, m, 32)")
    assert same("__shfl_xor_sync(~0u, v, m, warpSize)", "__shfl_xor_sync((0xFFFFFFFFu), (v), (m))")
    assert same("__ballot_sync(0xffffffff, p)", "__ballot_sync((unsigned)-1, p)")
    assert not same("__shfl_xor_sync(0x0000ffff, v, m)", "__shfl_xor_sync(uint32_t(-1), v, m)")
    assert not same("__shfl_xor_sync(0xffffffff, v, m)", "__shfl_xor_sync(0xffffffff, v, m, 16)")
    assert not same("__shfl_xor_sync(0xffffffff, v, m)", "__shfl_xor_sync(0xffffffff, w, m)")
    assert not same("__shfl_xor_sync(0xffffffff, v, m)", "__shfl_down_sync(0xffffffff, v, m)")
    assert not same("__shfl_xor_sync(mask, v, m)", "__shfl_xor_sync(0xffffffff, v, m)")
    assert not same("__shfl_xor_sync(0xffffffff, (a, b), m)", "__shfl_xor_sync(0xffffffff, a, b, m)")
