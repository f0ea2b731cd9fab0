// Per-token dynamic FP8 (e4m3) quantization: one block per token, scale = absmax / fp8 max.
#include <stdint.h>

#include "rocm_compat.h"

#ifdef USE_ROCM
#include <hip/hip_fp8.h>
// gfx942 (MI300) uses the fnuz encoding, gfx950 (MI355) OCP e4m3fn like NVIDIA: key on the header's
// per-target macros, not on "is ROCm". Host passes see both set; the type never crosses a kernel signature.
#if HIP_FP8_TYPE_OCP && !HIP_FP8_TYPE_FNUZ
typedef __hip_fp8_e4m3 ts_fp8_e4m3;
#define TS_FP8_MAX 448.f
#else
typedef __hip_fp8_e4m3_fnuz ts_fp8_e4m3;
#define TS_FP8_MAX 240.f
#endif
#else
#include <cuda_fp8.h>
typedef __nv_fp8_e4m3 ts_fp8_e4m3;
#define TS_FP8_MAX 448.f
#endif

constexpr int kBlockSize = 256;

__device__ float block_max(float v) {
  __shared__ float warp_max[kBlockSize / WARP_SIZE];
  __shared__ float total;
  const int lane = threadIdx.x % WARP_SIZE;
  const int warp = threadIdx.x / WARP_SIZE;
  v = ts_warp_max(v);
  if (lane == 0) warp_max[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < kBlockSize / WARP_SIZE ? warp_max[lane] : 0.f;
    v = ts_warp_max(v);
    if (lane == 0) total = v;
  }
  __syncthreads();
  return total;
}

__global__ void per_token_fp8_quant_kernel(uint8_t* out, float* scales, const float* in, int hidden) {
  const float* row = in + (long long)blockIdx.x * hidden;
  float amax = 0.f;
  for (int i = threadIdx.x; i < hidden; i += blockDim.x) amax = fmaxf(amax, fabsf(row[i]));
  const float scale = fmaxf(block_max(amax), 1e-12f) / TS_FP8_MAX;
  if (threadIdx.x == 0) scales[blockIdx.x] = scale;
  for (int i = threadIdx.x; i < hidden; i += blockDim.x) {
    const ts_fp8_e4m3 q(row[i] / scale);
    out[(long long)blockIdx.x * hidden + i] = q.__x;
  }
}

extern "C" int ts_per_token_fp8_quant(void* out, float* scales, const float* in, int tokens, int hidden,
                                      void* stream) {
  per_token_fp8_quant_kernel<<<tokens, kBlockSize, 0, (ts_stream_t)stream>>>(
      static_cast<uint8_t*>(out), scales, in, hidden);
  return ts_last_error();
}
