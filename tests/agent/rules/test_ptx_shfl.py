"""Warp shuffles written as inline PTX (`shfl.sync.{bfly,down,up,idx}.b32`, `"r"` and `"=f"` operands) become
HIP shuffles with the segment width the clamp encodes: the kernel compiles with hipcc gfx942 and nvcc with
the CUDA tokens unchanged, and the ROCm code permutes lanes (ds_bpermute); other masks and clamps stay
untranslated."""

from __future__ import annotations

from agent.proposers.rules.ptx_translate import translate
from tests.agent.rules.helpers import device_code, prove_inline_ptx

# The warp-reduction idiom of FlashAttention/FlashInfer-style math headers, written for this test.
KERNEL = r"""#include <cstdint>

__device__ __forceinline__ float shfl_xor_f(float x, int lane_mask) {
  float y;
  asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=f"(y) : "f"(x), "r"(lane_mask));
  return y;
}

__device__ __forceinline__ uint32_t shfl_xor1(uint32_t x) {
  uint32_t y;
  asm volatile("shfl.sync.bfly.b32 %0, %1, 1, 0x1f, 0xffffffff;\n" : "=r"(y) : "r"(x));
  return y;
}

__device__ __forceinline__ float shfl_down16(float x, unsigned delta) {
  float y;
  asm volatile("shfl.sync.down.b32 %0, %1, %2, 0x101f, 0xffffffff;" : "=f"(y) : "f"(x), "r"(delta));
  return y;
}

__device__ __forceinline__ int shfl_up8(int x) {
  int y;
  asm volatile("shfl.sync.up.b32 %0, %1, 1, 0x1800, 0xffffffff;" : "=r"(y) : "r"(x));
  return y;
}

__device__ __forceinline__ float lane0(float x) {
  float y;
  asm volatile("shfl.sync.idx.b32 %0, %1, 0, 0x1f, 0xffffffff;" : "=f"(y) : "f"(x));
  return y;
}

__global__ void warp_sum(float* out, uint32_t* bits, int* scan) {
  float v = out[threadIdx.x];
  for (int mask = 16; mask >= 1; mask /= 2) v += shfl_xor_f(v, mask);
  bits[threadIdx.x] ^= shfl_xor1(bits[threadIdx.x]);
  scan[threadIdx.x] += shfl_up8(scan[threadIdx.x]);
  out[threadIdx.x] = v + shfl_down16(v, 4) + lane0(v);
}
"""


def test_ptx_shuffles_become_hip_shuffles_with_the_width_of_their_clamp(git_repo, rocm_image, nvcc):
    root, prop = prove_inline_ptx(git_repo, rocm_image, KERNEL, "shfl.sync.bfly.b32", "=f")
    for line in (
        # a lane mask of 32 or more is clamped to the own lane by PTX; xor 0 is the own lane on ROCm
        "+  y = __shfl_xor(float(x), uint32_t(lane_mask) < 32u ? int(lane_mask) : 0, 32);",
        "+  y = __shfl_xor(uint32_t(x), 1, 32);",
        "+  y = __shfl_down(float(x), delta, 16);",  # c = (32 - 16) << 8 | 0x1f
        "+  y = __shfl_up(uint32_t(x), 1, 8);",  # c = (32 - 8) << 8
        "+  y = __shfl(float(x), 0, 32);",
    ):
        assert line in prop.diff, (line, prop.diff)
    assert prop.diff.count("+#else\n") == 5  # each asm statement stays, in its CUDA branch
    assert (root / "csrc/kernel.cuh").read_text().count('asm volatile("shfl.sync.') == 5
    assert "ds_bpermute_b32" in device_code(root, rocm_image, "-S")  # a lane permute, not a local copy


def test_shuffles_the_cuda_intrinsics_do_not_emit_stay_untranslated():
    f, fin = [("f", "y")], [("f", "x"), ("r", "m")]
    assert translate("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff", f, fin)  # the subset's own form
    assert translate("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0x0000ffff", f, fin) is None  # partial mask
    assert translate("shfl.sync.bfly.b32 %0, %1, %2, 0x0f, 0xffffffff", f, fin) is None  # odd clamp
    assert translate("shfl.sync.up.b32 %0, %1, %2, 0x1f, 0xffffffff", f, fin) is None  # up clamps at 0
    assert translate("shfl.sync.bfly.b32 %0, %1, 32, 0x1f, 0xffffffff", f, fin[:1]) is None
    assert translate("shfl.sync.bfly.b32 %0|p, %1, %2, 0x1f, 0xffffffff", f, fin) is None  # predicate out
    assert translate("shfl.sync.bfly.b64 %0, %1, %2, 0x1f, 0xffffffff", f, fin) is None
    assert translate("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff", [("h", "y")], fin) is None
