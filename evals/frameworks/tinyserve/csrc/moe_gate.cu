// MoE router: softmax over expert logits, then top-k, one warp per token.
#include "rocm_compat.h"

// Each lane holds up to this many experts, so a gate supports up to 8 * WARP_SIZE experts.
constexpr int kExpertsPerLane = 8;
constexpr float kNotSelected = -1.f;

// Warp argmax over (value, index); ties go to the lower expert index, like torch.topk.
__device__ __forceinline__ void warp_argmax(float& value, int& index) {
  for (int offset = WARP_SIZE / 2; offset > 0; offset >>= 1) {
    const float other_value = TS_SHFL_XOR(TS_FULL_MASK, value, offset);
    const int other_index = TS_SHFL_XOR(TS_FULL_MASK, index, offset);
    if (other_value > value || (other_value == value && other_index < index)) {
      value = other_value;
      index = other_index;
    }
  }
}

__global__ void topk_softmax_kernel(float* topk_weights, int* topk_ids, const float* logits, int tokens,
                                    int num_experts, int k, int renormalize) {
  const int warps_per_block = blockDim.x / WARP_SIZE;
  const int token = blockIdx.x * warps_per_block + threadIdx.x / WARP_SIZE;
  const int lane = threadIdx.x % WARP_SIZE;
  if (token >= tokens) return;  // whole warps leave together, so later shuffles stay convergent
  const float* row = logits + (long long)token * num_experts;

  float probs[kExpertsPerLane];
  float local_max = -3.0e38f;
  for (int j = 0; j < kExpertsPerLane; ++j) {
    const int e = lane + j * WARP_SIZE;
    probs[j] = e < num_experts ? row[e] : -3.0e38f;
    local_max = fmaxf(local_max, probs[j]);
  }
  const float row_max = ts_warp_max(local_max);
  float local_sum = 0.f;
  for (int j = 0; j < kExpertsPerLane; ++j) {
    const int e = lane + j * WARP_SIZE;
    probs[j] = e < num_experts ? __expf(probs[j] - row_max) : kNotSelected;
    local_sum += e < num_experts ? probs[j] : 0.f;
  }
  const float inv_sum = 1.f / ts_warp_sum(local_sum);

  float selected_sum = 0.f;
  for (int r = 0; r < k; ++r) {
    float best = kNotSelected;
    int best_index = num_experts;
    for (int j = 0; j < kExpertsPerLane; ++j) {
      if (probs[j] > best) {
        best = probs[j];
        best_index = lane + j * WARP_SIZE;
      }
    }
    warp_argmax(best, best_index);
    if (lane == 0) {
      topk_weights[token * k + r] = best * inv_sum;
      topk_ids[token * k + r] = best_index;
    }
    selected_sum += best * inv_sum;
    for (int j = 0; j < kExpertsPerLane; ++j) {
      if (lane + j * WARP_SIZE == best_index) probs[j] = kNotSelected;
    }
  }
  if (renormalize && lane == 0) {
    for (int r = 0; r < k; ++r) topk_weights[token * k + r] /= selected_sum;
  }
}

extern "C" int ts_topk_softmax(float* topk_weights, int* topk_ids, const float* logits, int tokens,
                               int num_experts, int k, int renormalize, void* stream) {
  constexpr int kWarpsPerBlock = 4;
  const int blocks = (tokens + kWarpsPerBlock - 1) / kWarpsPerBlock;
  topk_softmax_kernel<<<blocks, kWarpsPerBlock * WARP_SIZE, 0, (ts_stream_t)stream>>>(
      topk_weights, topk_ids, logits, tokens, num_experts, k, renormalize);
  return ts_last_error();
}
