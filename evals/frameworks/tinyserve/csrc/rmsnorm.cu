// RMSNorm over the hidden dimension: one block per token, a warp-shuffle block reduction.
#include "rocm_compat.h"

constexpr int kBlockSize = 256;

// Sum over the block; the result is valid in every thread after the call.
__device__ float block_sum(float v) {
  __shared__ float warp_sums[kBlockSize / WARP_SIZE];
  __shared__ float total;
  const int lane = threadIdx.x % WARP_SIZE;
  const int warp = threadIdx.x / WARP_SIZE;
  v = ts_warp_sum(v);
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < kBlockSize / WARP_SIZE ? warp_sums[lane] : 0.f;
    v = ts_warp_sum(v);
    if (lane == 0) total = v;
  }
  __syncthreads();
  return total;
}

__global__ void rmsnorm_kernel(float* out, const float* in, const float* weight, int hidden, float eps) {
  const float* row = in + (long long)blockIdx.x * hidden;
  float sq = 0.f;
  for (int i = threadIdx.x; i < hidden; i += blockDim.x) sq += row[i] * row[i];
  const float inv_rms = rsqrtf(block_sum(sq) / hidden + eps);
  for (int i = threadIdx.x; i < hidden; i += blockDim.x) {
    out[(long long)blockIdx.x * hidden + i] = row[i] * inv_rms * weight[i];
  }
}

extern "C" int ts_rmsnorm(float* out, const float* in, const float* weight, int tokens, int hidden,
                          float eps, void* stream) {
  rmsnorm_kernel<<<tokens, kBlockSize, 0, (ts_stream_t)stream>>>(out, in, weight, hidden, eps);
  return ts_last_error();
}
