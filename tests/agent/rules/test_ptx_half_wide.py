"""Half-precision (`=h`/`h`) and 64-bit-operand (`l`) PTX translated for ROCm: kernels shaped like vLLM's
dtype_float16 and vector/IPC helpers compile with hipcc gfx942 and nvcc with the CUDA tokens unchanged;
the ROCm side runs the AMDGPU instructions the PTX means (checked in the assembly and IR hipcc emits);
the bf16 rounding helper gives the bits of CUDA's own conversion; forms outside the subset stay
untranslated."""

from __future__ import annotations

import re
import subprocess

from agent.proposers.rules.ptx_half import HALF_HELPERS
from agent.proposers.rules.ptx_translate import translate
from tests.agent.rules.helpers import device_code, prove_inline_ptx

HALF_KERNEL = r"""#include <cstdint>

__device__ __forceinline__ uint16_t float_to_half(float f) {
  uint16_t h;
  asm volatile("cvt.rn.f16.f32 %0, %1;\n" : "=h"(h) : "f"(f));
  return h;
}

__device__ __forceinline__ float half_to_float(uint16_t h) {
  float f;
  asm volatile("cvt.f32.f16 %0, %1;\n" : "=f"(f) : "h"(h));
  return f;
}

__device__ __forceinline__ uint32_t pack(float lo, float hi) {
  uint32_t r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

__device__ __forceinline__ uint32_t hfma2(uint32_t a, uint32_t b, uint32_t c) {
  uint32_t d;
  asm volatile("fma.rn.f16x2 %0, %1, %2, %3;\n" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}

__device__ __forceinline__ uint16_t ex2_tanh(uint16_t x) {
  uint16_t y, t;
  asm("ex2.approx.f16 %0, %1;" : "=h"(y) : "h"(x));
  asm("tanh.approx.f16 %0, %1;" : "=h"(t) : "h"(y));
  return t;
}

__device__ __forceinline__ uint32_t ex2_x2(uint32_t x) {
  uint32_t y;
  asm("{\n"
      "  .reg .b16 lo, hi;\n"
      "  mov.b32 {lo, hi}, %1;\n"
      "  add.f16 lo, lo, hi;\n"
      "  mov.b32 %0, {lo, lo};\n"
      "}"
      : "=r"(y)
      : "r"(x));
  asm("ex2.approx.f16x2 %0, %1;" : "=r"(y) : "r"(y));
  return y;
}

__device__ __forceinline__ uint16_t tanh_bf16(uint16_t x) {
  uint16_t y;
  asm("tanh.approx.bf16 %0, %1;" : "=h"(y) : "h"(x));
  return y;
}

__global__ void k(const float* x, uint32_t* y) {
  const uint32_t p = pack(x[0], x[1]);
  const uint16_t h = ex2_tanh(float_to_half(x[2]));
  y[0] = hfma2(p, ex2_x2(p), p) + uint32_t(half_to_float(h)) + tanh_bf16(h);
}
"""

# Shaped like vLLM 0.34.0's csrc/cuda_vec_utils.cuh and attention/dcp_utils/dcp_direct_common.cuh.
WIDE_KERNEL = r"""#include <cstdint>

struct u32x4_t {
  uint32_t d[4];
};

__device__ void ld128(u32x4_t& val, const u32x4_t* ptr) {
  asm volatile("ld.global.nc.v4.u32 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(val.d[0]), "=r"(val.d[1]), "=r"(val.d[2]), "=r"(val.d[3])
               : "l"(ptr));
}

__device__ void store_release_system(uint32_t* ptr, uint32_t value) {
  uint64_t address = reinterpret_cast<uint64_t>(ptr);
  asm volatile("st.global.release.sys.u32 [%0], %1;" : : "l"(address), "r"(value) : "memory");
}

__device__ uint64_t claim(uint64_t* slot, uint32_t lo, uint32_t hi) {
  uint64_t global, desired, old;
  asm("cvta.to.global.u64 %0, %1;" : "=l"(global) : "l"(slot));
  asm("mov.b64 %0, {%1, %2};" : "=l"(desired) : "r"(lo), "r"(hi));
  asm volatile("atom.acq_rel.gpu.global.cas.b64 %0, [%1], %2, %3;"
               : "=l"(old)
               : "l"(global), "l"(uint64_t(0)), "l"(desired)
               : "memory");
  return old;
}

__global__ void k(uint64_t* slots, const u32x4_t* src, uint32_t* flags) {
  u32x4_t v;
  ld128(v, src);
  uint32_t lo, hi;
  const uint64_t old = claim(slots, v.d[0], v.d[1]);
  asm("mov.b64 {%0, %1}, %2;" : "=r"(lo), "=r"(hi) : "l"(old));
  store_release_system(flags, lo ^ hi);
}
"""


def test_half_precision_ptx_is_translated_and_runs_the_amdgpu_half_instructions(git_repo, rocm_image, nvcc):
    root, prop = prove_inline_ptx(git_repo, rocm_image, HALF_KERNEL, "cvt.rn.f16.f32", "=h")
    for line in (
        "+  h = rocm_compat_f16_bits(__float2half_rn(f));",
        "+  f = __half2float(rocm_compat_f16(h));",
        # cvt.rn.f16x2.f32 d, a, b puts a in the upper half: __halves2half2 takes (low, high)
        "+  r = rocm_compat_f16x2_bits(__halves2half2(__float2half_rn(lo), __float2half_rn(hi)));",
        "+  y = rocm_compat_f16_bits(hexp2(rocm_compat_f16(x)));",
        "+    rocport_lo = uint16_t(x);\n+    rocport_hi = uint16_t(uint32_t(x) >> 16);",
        "+    y = uint32_t(rocport_lo) | (uint32_t(rocport_lo) << 16);",
        "+  y = rocm_compat_bf16(tanhf(rocm_compat_bf16_to_float(x)));",
    ):
        assert line in prop.diff, prop.diff
    assert prop.files == ["csrc/kernel.cuh", "csrc/rocm_compat.h"]
    assert "+#include <hip/hip_fp16.h>" in prop.diff  # hipcc does not pre-include it
    asm = device_code(root, rocm_image, "-S")
    assert "v_exp_f16" in asm  # ex2.approx.f16 -> the hardware's half-precision 2^x
    assert "v_pk_fma_f16" in asm  # fma.rn.f16x2 stays one fused packed op
    assert re.search(r"v_cvt_f16_f32", asm) and re.search(r"v_cvt_f32_f16", asm)


def test_64bit_operand_ptx_is_translated_with_its_order_and_scope(git_repo, rocm_image, nvcc):
    root, prop = prove_inline_ptx(git_repo, rocm_image, WIDE_KERNEL, "ld.global.nc.v4.u32", "=h")
    for line in (
        "+  global = uint64_t(slot);",
        "+  desired = uint64_t(lo) | (uint64_t(hi) << 32);",
        "+  lo = uint32_t(old);\n+  hi = uint32_t(uint64_t(old) >> 32);",
        # one access per element: PTX's memory model treats a vector access as its scalar accesses
        "+    val.d[0] = rocport_v[0];\n+    val.d[1] = rocport_v[1];",
        "+    uint64_t rocport_old = uint64_t(uint64_t(0));",
        "+    old = rocport_old;",
    ):
        assert line in prop.diff, (line, prop.diff)
    assert "__hip_atomic_compare_exchange_strong(reinterpret_cast<uint64_t*>(global)" in prop.diff
    ir = device_code(root, rocm_image, "-O1 -S -emit-llvm")
    # acq_rel on success; the failure order drops the release half (a failed CAS stores nothing)
    assert re.search(
        r'cmpxchg ptr(?: addrspace\(\d\))? %\w+, i64 0, i64 %\w+ syncscope\("agent"\) acq_rel acquire', ir
    ), ir[-3000:]
    assert re.search(
        r"store atomic i32 %\w+, ptr(?: addrspace\(\d\))? %\w+ release, align 4", ir
    )  # system scope


def test_bf16_rounding_gives_the_bits_of_cudas_own_conversion(tmp_path, nvcc):
    """CUDA's host __float2bfloat16_rn is NVIDIA's round-to-nearest-even to bf16 (cvt.rn.bf16.f32 on the
    device). Compared on every float whose low 16 bits are one of 7 patterns (ties and neighbours, NaNs,
    infinities and subnormals included)."""
    src = (
        "#include <cstdint>\n#include <cstdio>\n#include <cstring>\n#include <cuda_bf16.h>\n"
        "namespace own {\n#undef __device__\n#define __device__\n"
        + HALF_HELPERS["rocm_compat_bf16"]
        + "}\n"
        + r"""int main() {
  const uint32_t lows[] = {0u, 1u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu, 0x1234u};
  long bad = 0, n = 0;
  for (uint32_t hi = 0; hi < 0x10000u; ++hi)
    for (uint32_t lo : lows) {
      const uint32_t bits = hi << 16 | lo;
      float x;
      std::memcpy(&x, &bits, 4);
      const __nv_bfloat16 ref = __float2bfloat16_rn(x);
      uint16_t want;
      std::memcpy(&want, &ref, 2);
      const uint16_t got = own::rocm_compat_bf16(x);
      const bool nan = (bits & 0x7fffffffu) > 0x7f800000u;
      // a NaN stays a quiet NaN of the same sign (CUDA returns one canonical NaN; any NaN is one)
      const bool quiet_nan = (got & 0x7fc0u) == 0x7fc0u && (got >> 15) == (bits >> 31);
      bad += nan ? !quiet_nan : got != want;
      n += 1;
    }
  printf("%ld %ld\n", bad, n);
}
"""
    )
    (tmp_path / "bf16.cu").write_text(src)
    subprocess.run([nvcc, "-O1", "-o", str(tmp_path / "bf16"), str(tmp_path / "bf16.cu")], check=True)
    got = subprocess.run([str(tmp_path / "bf16")], capture_output=True, text=True, check=True)
    assert got.stdout.split() == ["0", str(7 * 65536)]


def test_half_and_wide_forms_outside_the_subset_stay_untranslated():
    h, r, lp = [("h", "y")], [("h", "x")], [("l", "p")]
    assert translate("ex2.approx.ftz.f16 %0, %1", h, r) is None  # .ftz is spelled on bf16 ex2 only
    assert translate("ex2.approx.bf16 %0, %1", h, r) is None  # and bf16 ex2 requires it
    assert translate("fma.rn.relu.f16 %0, %1, %1, %1", h, r) is None
    assert translate("add.sat.f16 %0, %1, %1", h, r) is None
    assert translate("add.bf16 %0, %1, %1", h, r) is None  # no bf16 arithmetic
    assert translate("ex2.approx.f16 %0, %1", [("r", "y")], r) is None  # a 32-bit register is no .f16
    assert translate("cvta.to.shared.u64 %0, %1", [("l", "s")], lp) is None  # LDS addresses differ
    assert translate("cvta.to.global.u32 %0, %1", [("r", "s")], [("r", "p")]) is None
    assert translate("ld.acquire.gpu.global.v2.u32 {%0, %1}, [%2]", [("r", "a"), ("r", "b")], lp) is None
    assert translate("ld.global.nc.v4.u32 {%0, %1}, [%2]", [("r", "a"), ("r", "b")], lp) is None  # 2 of 4
    assert translate("atom.cluster.global.cas.b64 %0, [%1], %2, %3", [("l", "o")], lp * 3) is None
    assert translate("mov.b64 %0, {%1, %2, %3, %4}", [("l", "d")], r * 4) is None
