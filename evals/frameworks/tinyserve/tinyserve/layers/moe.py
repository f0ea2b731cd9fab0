"""Mixture of experts: a softmax top-k router, routed experts and always-on shared experts."""
from __future__ import annotations

import numpy as np

from tinyserve import platform
from tinyserve.config import ModelConfig
from tinyserve.layers import moe_kernels
from tinyserve.layers.linear import Linear
from tinyserve.nn import Module, ModuleList
from tinyserve.quant import Mxfp4Config

# DeepGEMM's grouped GEMMs exist only on NVIDIA; everywhere else the numpy experts run.
if platform.is_cuda():
    try:
        import deep_gemm
    except ImportError:
        deep_gemm = None
else:
    deep_gemm = None


def silu(x: np.ndarray) -> np.ndarray:
    return x / (1.0 + np.exp(-x))


class MLP(Module):
    """gate_up_proj (fused gate_proj + up_proj) -> silu-and-mul -> down_proj."""

    def __init__(self, hidden_size: int, intermediate_size: int, prefix: str,
                 quant_config: Mxfp4Config | None):
        self.gate_up_proj = Linear(hidden_size, [intermediate_size, intermediate_size],
                                   f"{prefix}.gate_up_proj", quant_config)
        self.down_proj = Linear(intermediate_size, [hidden_size], f"{prefix}.down_proj", quant_config)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        gate_up = self.gate_up_proj(x)
        half = gate_up.shape[-1] // 2
        return self.down_proj(silu(gate_up[:, :half]) * gate_up[:, half:])


def topk_softmax(logits: np.ndarray, k: int, renormalize: bool) -> tuple[np.ndarray, np.ndarray]:
    """The router: what csrc/moe_gate.cu computes on the GPU. Returns (weights, expert ids) [tokens, k]."""
    probs = np.exp(logits - logits.max(axis=-1, keepdims=True))
    probs /= probs.sum(axis=-1, keepdims=True)
    ids = np.argsort(-probs, axis=-1, kind="stable")[:, :k]
    weights = np.take_along_axis(probs, ids, axis=-1)
    if renormalize:
        weights /= weights.sum(axis=-1, keepdims=True)
    return weights, ids


class MoE(Module):
    """Routed experts plus shared experts. `shared_experts` may live elsewhere (the MTP head fuses them)."""

    def __init__(self, config: ModelConfig, prefix: str, quant_config: Mxfp4Config | None,
                 with_shared_experts: bool = True):
        self.top_k = config.num_experts_per_tok
        self.renormalize = config.norm_topk_prob
        # The router stays full width: it is tiny and its logits decide everything downstream.
        self.gate = Linear(config.hidden_size, [config.n_routed_experts], f"{prefix}.gate", None)
        self.experts = ModuleList([
            MLP(config.hidden_size, config.moe_intermediate_size, f"{prefix}.experts.{e}", quant_config)
            for e in range(config.n_routed_experts)])
        if with_shared_experts:
            self.shared_experts = MLP(config.hidden_size,
                                      config.moe_intermediate_size * config.n_shared_experts,
                                      f"{prefix}.shared_experts", quant_config)

    def __call__(self, x: np.ndarray, shared_experts: MLP | None = None) -> np.ndarray:
        weights, ids = topk_softmax(self.gate(x), self.top_k, self.renormalize)
        out = moe_kernels.run_experts(self.experts, x, weights, ids)
        shared = shared_experts if shared_experts is not None else getattr(self, "shared_experts", None)
        if shared is not None:
            out += shared(x)
        return out
