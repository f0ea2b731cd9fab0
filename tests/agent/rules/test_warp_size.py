"""warp_size rule: literals derived from WARP_SIZE in warpSize-generic kernels; 32-lane kernels left alone."""
from __future__ import annotations

from agent.rules import Workspace, propose_for
from tests.agent.rules.helpers import declines, failure, host_toolchains, image_toolchains, propose, validate

MIXED = """__global__ void lane_sums(const float* x, float* out) {
  float v = x[threadIdx.x];
  for (int offset = warpSize / 2; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffff, v, offset);
  int lane = threadIdx.x % 32;
  unsigned first = threadIdx.x & 31;
  if (lane == 0 && first == 0) out[threadIdx.x / 32] = v;
}
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
