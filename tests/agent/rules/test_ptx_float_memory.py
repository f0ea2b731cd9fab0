"""Float and memory-ordering PTX translated for ROCm: vLLM-shaped approximations, an fp8 pack and
cross-GPU flags compile with hipcc gfx942 and nvcc with the CUDA tokens unchanged; the ROCm side
carries the PTX's order and scope (checked in the LLVM IR hipcc emits); the fp8 encoder gives the bytes
CUDA's own conversion gives; forms outside the subset stay untranslated."""

from __future__ import annotations

import re
import subprocess

from agent.proposers.rules.ptx_float import FP8_HELPERS
from agent.proposers.rules.ptx_translate import translate
from tests.agent.rules.helpers import prove_inline_ptx

# Shaped like vLLM 0.34.0's csrc/moe/muse_spark_routing.cu, quantization/fp4/nvfp4_utils.cuh,
# qwen4_exp/hc_up_gate_mix.cu and fused_minimax_m3_qknorm_rope_kv_insert_kernel.cu.
FLOAT_KERNEL = r"""#include <cstdint>

__device__ __forceinline__ float ex2_approx(float x) {
  float r;
  asm("ex2.approx.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}

__device__ __forceinline__ float rcp_sqrt_tanh(float a) {
  float b, s, t;
  asm volatile("rcp.approx.ftz.f32 %0, %1;" : "=f"(b) : "f"(a));
  asm("sqrt.approx.f32 %0, %1;" : "=f"(s) : "f"(b));
  asm("tanh.approx.f32 %0, %1;" : "=f"(t) : "f"(0.5f * s));
  return t;
}

__device__ __forceinline__ float lg2_rsqrt_sin_cos(float x) {
  float l, r, si, co;
  asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(l) : "f"(x));
  asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(l));
  asm("sin.approx.f32 %0, %1;" : "=f"(si) : "f"(r));
  asm("cos.approx.ftz.f32 %0, %1;" : "=f"(co) : "f"(si));
  return co;
}

__device__ __forceinline__ uint32_t packE4m3(float a, float b, float c, float d) {
  uint32_t r;
  asm("{\n"
      "  .reg .b16 lo, hi;\n"
      "  cvt.rn.satfinite.e4m3x2.f32 lo, %2, %1;\n"
      "  cvt.rn.satfinite.e4m3x2.f32 hi, %4, %3;\n"
      "  mov.b32 %0, {lo, hi};\n"
      "}"
      : "=r"(r)
      : "f"(a), "f"(b), "f"(c), "f"(d));
  return r;
}

__global__ void k(const float* x, uint32_t* y) {
  const float v = ex2_approx(x[threadIdx.x]) + rcp_sqrt_tanh(x[threadIdx.x]) + lg2_rsqrt_sin_cos(x[0]);
  y[threadIdx.x] = packE4m3(v, -v, 2.0f * v, 0.5f * v);
}
"""

# Shaped like vLLM 0.34.0's csrc/custom_collective_common.cuh and csrc/persistent_topk.cuh.
FLAGS_KERNEL = r"""#include <cstdint>

__device__ void st_flag_release(uint32_t* flag_addr, uint32_t flag) {
  asm volatile("st.release.sys.global.u32 [%1], %0;" ::"r"(flag), "l"(flag_addr));
}

__device__ uint32_t ld_flag_acquire(uint32_t* flag_addr) {
  uint32_t flag;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(flag) : "l"(flag_addr));
  return flag;
}

__device__ int ld_acquire(int* ptr) {
  int state = 0;
  asm volatile("ld.global.acquire.gpu.b32 %0, [%1];\n" : "=r"(state) : "l"(ptr));
  return state;
}

__device__ void red_release(int* ptr, int val) {
  asm volatile("fence.acq_rel.gpu;\n");
  asm volatile("red.relaxed.gpu.global.add.s32 [%0], %1;\n" : : "l"(ptr), "r"(val));
}

__global__ void k(uint32_t* peer, uint32_t* self, int* counter, uint32_t flag) {
  st_flag_release(&peer[blockIdx.x], flag);
  while (ld_flag_acquire(&self[blockIdx.x]) != flag) {
  }
  red_release(counter, 1);
  while (ld_acquire(counter) < 2) {
  }
}
"""


def test_float_approximations_and_fp8_pack_are_translated_and_proven(git_repo, rocm_image, nvcc):
    _root, prop = prove_inline_ptx(git_repo, rocm_image, FLOAT_KERNEL, "ex2.approx", "=f")
    for line in (
        "+  r = __builtin_amdgcn_exp2f(x);",
        "+  b = __builtin_amdgcn_rcpf(a);",
        "+  s = __builtin_amdgcn_sqrtf(b);",
        "+  t = tanhf(0.5f * s);",
        "+  l = __builtin_amdgcn_logf(x);",
        "+  r = __builtin_amdgcn_rsqf(l);",
        "+  si = __sinf(r);",
        "+  co = __cosf(si);",
        "+    rocport_lo = uint16_t(rocm_compat_fp8(b, 3, 7, 0x7eu) << 8 | rocm_compat_fp8(a, 3, 7, 0x7eu));",
        "+    r = uint32_t(rocport_lo) | (uint32_t(rocport_hi) << 16);",
    ):
        assert line in prop.diff
    assert prop.files == ["csrc/kernel.cuh", "csrc/rocm_compat.h"]  # the encoder defined once, in the header
    assert "-  asm" not in prop.diff


def test_memory_ordering_keeps_its_order_and_scope_on_rocm(git_repo, rocm_image, nvcc):
    from sandboxes.docker import DockerSandbox

    root, prop = prove_inline_ptx(git_repo, rocm_image, FLAGS_KERNEL, "ld.acquire.sys", "=f")
    assert (
        "+  flag = __hip_atomic_load(reinterpret_cast<const uint32_t*>(flag_addr), __ATOMIC_ACQUIRE, "
        "__HIP_MEMORY_SCOPE_SYSTEM);" in prop.diff
    )
    assert (
        "__hip_atomic_store(reinterpret_cast<uint32_t*>(flag_addr), uint32_t(flag), __ATOMIC_RELEASE"
        in prop.diff
    )
    # What the AMDGPU backend receives: the orders and sync scopes of the PTX (system scope has none).
    with DockerSandbox(rocm_image, str(root)) as box:
        ir = box.run(
            "hipcc -x hip -DUSE_ROCM -include hip/hip_runtime.h --offload-arch=gfx942 --cuda-device-only -O1 "
            "-S -emit-llvm "
            "-I. -o - csrc/unit.cu",
            cwd=str(root),
        )
    assert ir.ok, ir.stderr[-2000:]
    text = ir.stdout
    ptr = r"ptr(?: addrspace\(\d\))? %\w+"
    assert re.search(rf"store atomic i32 %\w+, {ptr} release, align 4", text), text[-3000:]  # system
    assert re.search(rf"load atomic i32, {ptr} acquire, align 4", text), text[-3000:]  # system
    assert re.search(r'load atomic i32, .*syncscope\("agent"\) acquire', text), text[-2000:]
    assert re.search(r'fence syncscope\("agent"\) acq_rel', text), text[-2000:]
    assert re.search(r'atomicrmw add .*syncscope\("agent"\) monotonic', text), text[-2000:]


def test_fp8_encoder_gives_the_bytes_of_cudas_own_conversion(tmp_path, nvcc):
    """CUDA's host __nv_cvt_float_to_fp8(x, __NV_SATFINITE, fmt) is NVIDIA's software form of the same
    cvt.rn.satfinite conversion (on sm_89+ device code it is that instruction). Compared on every float
    whose low 16 bits are one of 7 patterns (the ties and their neighbours included), both formats."""
    src = (
        "#include <cstdint>\n#include <cstdio>\n#include <cstring>\n#include <cuda_fp8.h>\n"
        "namespace own {\n#undef __device__\n#define __device__\n"
        + "".join(FP8_HELPERS.values())
        + "}\n"
        + r"""int main() {
  const uint32_t lows[] = {0u, 1u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu, 0x1234u};
  long bad = 0, n = 0;
  for (uint32_t hi = 0; hi < 0x10000u; ++hi)
    for (uint32_t lo : lows) {
      const uint32_t bits = hi << 16 | lo;
      float x;
      std::memcpy(&x, &bits, 4);
      const unsigned w4 = __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3);
      const unsigned w5 = __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2);
      bad += w4 != own::rocm_compat_fp8(x, 3, 7, 0x7eu);
      bad += w5 != own::rocm_compat_fp8(x, 2, 15, 0x7bu);
      n += 2;
    }
  printf("%ld %ld\n", bad, n);
}
"""
    )
    (tmp_path / "fp8.cu").write_text(src)
    subprocess.run([nvcc, "-O1", "-o", str(tmp_path / "fp8"), str(tmp_path / "fp8.cu")], check=True)
    got = subprocess.run([str(tmp_path / "fp8")], capture_output=True, text=True, check=True)
    assert got.stdout.split() == ["0", str(2 * 7 * 65536)]


def test_forms_outside_the_subset_stay_untranslated():
    flag = [("r", "f")], [("l", "p")]
    assert translate("ld.acquire.cluster.global.u32 %0, [%1]", *flag) is None  # no HIP cluster scope
    assert translate("ld.acquire.sys.global.L1::no_allocate.u32 %0, [%1]", *flag) is None
    assert translate("ld.acquire.global.u32 %0, [%1]", *flag) is None  # an order needs its scope
    assert translate("ex2.approx.f16 %0, %1", [("f", "y")], [("h", "x")]) is None  # a half into a float
    assert (
        translate("cvt.rn.satfinite.relu.e4m3x2.f32 %0, %1, %2", [("h", "d")], [("f", "a"), ("f", "b")])
        is None
    )
    assert translate("rcp.approx.f32 %0, %1", [("f", "y")], [("r", "bits")]) is None  # an int is no float
    assert translate("lop3.b32 %0, %1, %1, %1, 0x96", [("r", "d")], [("f", "x")]) is None  # nor the reverse


PREFETCH_KERNEL = r"""#include <cstdint>

// Prefetches the next tile's rows into L2 and reads the current one with a global timer stamp.
__device__ __forceinline__ float read_tile(const float* cur, const float* next, uint64_t* stamp) {
  asm volatile("prefetch.global.L2 [%0];" ::"l"(next));
  asm volatile("prefetch.global.L2::evict_last [%0+128];" ::"l"(next));
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  *stamp = t;
  return *cur;
}

__global__ void k(const float* a, float* o, uint64_t* s) { o[threadIdx.x] = read_tile(a, a + 256, s); }
"""


def test_prefetch_hints_become_nothing(git_repo, rocm_image, nvcc):
    """A prefetch is only a cache hint: on ROCm its address is evaluated and dropped, the kernel's results kept."""
    _root, prop = prove_inline_ptx(git_repo, rocm_image, PREFETCH_KERNEL, "prefetch.global.L2", "l")
    assert "+  (void)(next);" in prop.diff
    assert "+  (void)(reinterpret_cast<const char*>(next) + 128);" in prop.diff
