// Fused SiLU-and-multiply on bf16: out = silu(x[:, :d]) * x[:, d:], the MoE expert activation.
#include "rocm_compat.h"
#include "type_compat.h"

__device__ __forceinline__ float silu(float x) { return x / (1.f + __expf(-x)); }

__global__ void silu_and_mul_kernel(ts_bf16* out, const ts_bf16* in, int d) {
  const long long token = blockIdx.x;
  const ts_bf16* gate = in + token * 2 * d;
  const ts_bf16* up = gate + d;
  for (int i = threadIdx.x; i < d; i += blockDim.x) {
    const float g = __bfloat162float(gate[i]);
    const float u = __bfloat162float(up[i]);
    out[token * d + i] = __float2bfloat16(silu(g) * u);
  }
}

extern "C" int ts_silu_and_mul(void* out, const void* in, int tokens, int d, void* stream) {
  const int threads = d < 1024 ? d : 1024;
  silu_and_mul_kernel<<<tokens, threads, 0, (ts_stream_t)stream>>>(
      static_cast<ts_bf16*>(out), static_cast<const ts_bf16*>(in), d);
  return ts_last_error();
}
