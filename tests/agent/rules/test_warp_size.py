"""warp_size rule: literals derived from WARP_SIZE in warpSize-generic kernels; 32-lane kernels left alone."""

from __future__ import annotations

import pytest

from agent.proposers.rules import Workspace, propose_for
from tests.agent.rules.helpers import declines, failure, host_toolchains, image_toolchains, propose, validate

MIXED = """__global__ void lane_sums(const float* x, float* out) {
  float v = x[threadIdx.x];
  for (int offset = warpSize / 2; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffff, v, offset);
  int lane = threadIdx.x % 32;
  unsigned first = threadIdx.x & 31;
  if (lane == 0 && first == 0) out[threadIdx.x / 32] = v;
}
"""
# A repo whose compat header is already the one warp-size source of truth, and a gate that sizes its
# warps with CUB's macro (undeclared under hipCUB) and derives lanes with literal masks.
COMPAT = """#pragma once
#ifdef USE_ROCM
#include <hip/hip_runtime.h>
#define WARP_SIZE 64
#define SHFL_XOR(v, m) __shfl_xor((v), (m), WARP_SIZE)
#else
#include <cuda_runtime.h>
#define WARP_SIZE 32
#define SHFL_XOR(v, m) __shfl_xor_sync(0xffffffffu, (v), (m))
#endif
"""
GATE = """#include "compat.h"

#ifdef USE_ROCM
#include <hipcub/hipcub.hpp>
namespace cub = hipcub;
#else
#include <cub/cub.cuh>
#endif

constexpr int kWarpThreads = CUB_WARP_THREADS(0);

__global__ void gate(const float* x, float* out) {
  const int warp = blockIdx.x * (blockDim.x / kWarpThreads) + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 0x1f;
  float v = x[threadIdx.x];
  for (int o = WARP_SIZE / 2; o > 0; o >>= 1) v += SHFL_XOR(v, o);
  if (lane == 0) out[warp] = v;
}

void launch(const float* x, float* out, int warps) { gate<<<warps, kWarpThreads>>>(x, out); }
"""
LANES32 = """__global__ void k(float* x) {
  int lane = threadIdx.x % 32;
  x[lane] = 0.f;
}
"""


def test_generic_kernel_literals_follow_warp_size(git_repo, hipcc, nvcc, rocm_image):
    root = git_repo({"csrc/sums.cu": MIXED})
    fail = failure("warp_size", "csrc/sums.cu", "% 32")
    fail.line = 4
    prop = propose(root, fail, "gfx90a")
    assert "+  int lane = threadIdx.x % WARP_SIZE;" in prop.diff
    assert "+  if (lane == 0 && first == 0) out[threadIdx.x / WARP_SIZE] = v;" in prop.diff
    assert "+#ifdef USE_ROCM\n+  unsigned first = threadIdx.x & (WARP_SIZE - 1);\n+#else\n" in prop.diff
    assert "csrc/rocm_compat.h" in prop.files
    outcome = validate(root, host_toolchains(root), prop, fail)
    assert outcome.kept, outcome.reason
    assert not propose_for(fail, Workspace(root=root)).proposals
    # Now the kernel is warpSize-generic: the warp rule keeps the hardware width and builds for gfx942.
    warp = failure("warp_intrinsic", "csrc/sums.cu", "__shfl_down_sync")
    prop2 = propose(root, warp)
    assert "WARP_SHFL_DOWN(0xffffffff, v, offset)" in prop2.diff  # hardware width: no WARP32_
    outcome2 = validate(root, image_toolchains(root, rocm_image, "gfx942"), prop2, warp)
    assert outcome2.kept, outcome2.reason
    assert any(c.name == "hipcc gfx942 csrc/sums.cu" and c.detail == "compiles" for c in outcome2.checks)


def test_mixed_kernel_warp_rule_declines_until_literals_are_fixed(git_repo):
    root = git_repo({"csrc/sums.cu": MIXED})
    assert "ambiguous" in declines(root, failure("warp_intrinsic", "csrc/sums.cu", "__shfl_down_sync"))[0]


def test_32_lane_kernel_keeps_its_literals(git_repo):
    root = git_repo({"k.cu": LANES32})
    assert "32-lane" in declines(root, failure("warp_size", "k.cu", "% 32"))[0]
    assert "HIPCUB_WARP_THREADS" in declines(root, failure("warp_size", "k.cu", "CUB_WARP_THREADS"))[0]


@pytest.mark.slow
def test_cub_warp_threads_and_lane_masks_follow_the_repo_warp_size(git_repo, nvcc, rocm_image):
    root = git_repo({"csrc/compat.h": COMPAT, "csrc/gate.cu": GATE})
    fail = failure(
        "warp_size",
        "csrc/gate.cu",
        "CUB_WARP_THREADS",
        "csrc/gate.cu:10:30: error: use of undeclared identifier 'CUB_WARP_THREADS'",
    )
    fail.line = 10
    prop = propose(root, fail)
    assert prop.files == ["csrc/gate.cu"]  # the repo's WARP_SIZE serves: no new header, no new include
    assert (
        "+#ifdef USE_ROCM\n+constexpr int kWarpThreads = WARP_SIZE;\n+#else\n"
        " constexpr int kWarpThreads = CUB_WARP_THREADS(0);\n+#endif\n"
    ) in prop.diff
    # Both lane lines in one ROCm block; the CUDA lines stay as written in the #else branch.
    assert (
        "+#ifdef USE_ROCM\n"
        "+  const int warp = blockIdx.x * (blockDim.x / kWarpThreads) + (threadIdx.x / WARP_SIZE);\n"
        "+  const int lane = threadIdx.x & (WARP_SIZE - 1);\n+#else\n"
        "   const int warp = blockIdx.x * (blockDim.x / kWarpThreads) + (threadIdx.x >> 5);\n"
        "   const int lane = threadIdx.x & 0x1f;\n+#endif\n"
    ) in prop.diff
    outcome = validate(root, image_toolchains(root, rocm_image, "gfx942"), prop, fail)
    assert outcome.kept, outcome.reason
    checks = {c.name: (c.ok, c.detail) for c in outcome.checks}
    # CUDA sees exactly what it saw before: the old lines only moved into the `#else` branch (proven from
    # the text, so nvcc is not rerun)
    assert checks["cuda identity csrc/gate.cu"][0]
    assert checks["hipcc gfx942 csrc/gate.cu"] == (True, "compiles")
    assert checks["nvcc csrc/gate.cu"] == (True, "not recompiled: its CUDA input is unchanged (above)")
    assert not propose_for(fail, Workspace(root=root)).proposals
    scan_fail = failure("warp_size", "csrc/gate.cu", "& 0x1f")
    assert not propose_for(scan_fail, Workspace(root=root)).proposals


def test_shift_inside_a_wider_expression_is_not_rewritten(git_repo):
    # `base + tid >> 5` is `(base + tid) >> 5`; `/ WARP_SIZE` there would bind to tid alone.
    src = (
        "__global__ void k(int* x, int base) {\n  int tid = threadIdx.x;\n"
        "  x[tid % WARP_SIZE] = base + tid >> 5;\n}\n"
    )
    root = git_repo({"k.cu": src})
    assert "cannot rewrite safely" in declines(root, failure("warp_size", "k.cu", ">> 5"))[0]


def test_suffixed_masks_and_plain_shifts_get_rocm_copies():
    from agent.proposers.rules.warp_size import rewrite

    src = "x = f(tid >> 5u);\ny = lane_id & 31u;\nz = a + tid >> 5;\n"
    new, skipped = rewrite(src, [1, 2, 3])
    assert new == (
        "#ifdef USE_ROCM\nx = f(tid / WARP_SIZE);\ny = lane_id & (WARP_SIZE - 1);\n#else\n"
        "x = f(tid >> 5u);\ny = lane_id & 31u;\n#endif\nz = a + tid >> 5;\n"
    )
    assert skipped == ["line 3 (no safe rewrite of the literal in this expression)"]


def test_cub_warp_threads_without_a_warp_size_gets_one_compat_header(git_repo):
    # No WARP_SIZE anywhere: the rule creates the one compat header defining it and includes it.
    gate = (
        GATE.replace('#include "compat.h"\n\n', "")
        .replace("WARP_SIZE / 2", "kWarpThreads / 2")
        .replace("SHFL_XOR(v, o)", "__shfl_xor_sync(0xffffffffu, v, o)")
    )
    root = git_repo({"csrc/gate.cu": gate})
    prop = propose(root, failure("warp_size", "csrc/gate.cu", "CUB_WARP_THREADS"))
    assert prop.files == ["csrc/gate.cu", "csrc/rocm_compat.h"]
    assert '+#include "rocm_compat.h"' in prop.diff and "+#define WARP_SIZE 64" in prop.diff
    assert "+constexpr int kWarpThreads = WARP_SIZE;" in prop.diff


def test_a_dangling_compat_header_symlink_is_a_decline_naming_it_not_a_crash(git_repo):
    """find_compat picks the header by name; a symlink to nowhere used to reach insert_block(None)."""
    root = git_repo({"csrc/sums.cu": MIXED})
    (root / "csrc" / "rocm_compat.h").symlink_to(root / "gone" / "rocm_compat.h")
    fail = failure("warp_size", "csrc/sums.cu", "% 32")
    fail.line = 4
    [reason] = declines(root, fail)
    assert "csrc/rocm_compat.h" in reason and "dangling symlink" in reason
