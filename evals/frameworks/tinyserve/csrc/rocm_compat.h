// rocm_compat.h: the one place where CUDA and ROCm differ for tinyserve's kernels.
// Kernels are written CUDA-first; everything vendor-specific they need goes through here.
#pragma once

#ifdef USE_ROCM
#include <hip/hip_runtime.h>

// tinyserve targets CDNA (gfx90a, gfx942, gfx950): a wavefront is 64 lanes and lane masks are 64-bit.
#define WARP_SIZE 64
typedef unsigned long long ts_lane_mask_t;
#define TS_FULL_MASK 0xffffffffffffffffULL
// HIP shuffles take no mask; pass the width explicitly so a logical warp is exactly WARP_SIZE lanes.
#define TS_SHFL_XOR(mask, var, lane_mask) __shfl_xor((var), (lane_mask), WARP_SIZE)
#define TS_SHFL(mask, var, src_lane) __shfl((var), (src_lane), WARP_SIZE)

typedef hipStream_t ts_stream_t;
#define ts_last_error() ((int)hipGetLastError())

#else
#include <cuda_runtime.h>

#define WARP_SIZE 32
typedef unsigned int ts_lane_mask_t;
#define TS_FULL_MASK 0xffffffffu
#define TS_SHFL_XOR(mask, var, lane_mask) __shfl_xor_sync((mask), (var), (lane_mask))
#define TS_SHFL(mask, var, src_lane) __shfl_sync((mask), (var), (src_lane))

typedef cudaStream_t ts_stream_t;
#define ts_last_error() ((int)cudaGetLastError())

#endif

// Warp-wide reductions shared by the kernels (every lane gets the result).
__device__ __forceinline__ float ts_warp_sum(float v) {
  for (int offset = WARP_SIZE / 2; offset > 0; offset >>= 1) v += TS_SHFL_XOR(TS_FULL_MASK, v, offset);
  return v;
}

__device__ __forceinline__ float ts_warp_max(float v) {
  for (int offset = WARP_SIZE / 2; offset > 0; offset >>= 1) v = fmaxf(v, TS_SHFL_XOR(TS_FULL_MASK, v, offset));
  return v;
}
