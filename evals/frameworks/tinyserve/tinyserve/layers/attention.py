"""Causal self-attention with a fused qkv_proj, grouped KV heads, rotary positions and a KV cache."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from tinyserve.config import ModelConfig
from tinyserve.layers.linear import Linear
from tinyserve.nn import Module
from tinyserve.quant import Mxfp4Config


@dataclass
class KVCache:
    """Keys and values of one layer for the tokens seen so far: [tokens, kv_heads, head_dim]."""

    keys: list[np.ndarray] = field(default_factory=list)
    values: list[np.ndarray] = field(default_factory=list)

    def append(self, k: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        self.keys.append(k)
        self.values.append(v)
        if len(self.keys) > 1:  # keep one array so long prompts do not pay per-chunk concatenation twice
            self.keys = [np.concatenate(self.keys)]
            self.values = [np.concatenate(self.values)]
        return self.keys[0], self.values[0]

    def __len__(self) -> int:
        return sum(k.shape[0] for k in self.keys)


def rotary(x: np.ndarray, positions: np.ndarray, theta: float) -> np.ndarray:
    """Rotate pairs (first half, second half) of the head dimension by position-dependent angles."""
    half = x.shape[-1] // 2
    freqs = 1.0 / theta ** (np.arange(half, dtype=np.float32) / half)
    angles = positions[:, None].astype(np.float32) * freqs[None, :]
    cos, sin = np.cos(angles)[:, None, :], np.sin(angles)[:, None, :]
    x1, x2 = x[..., :half], x[..., half:]
    return np.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1)


class Attention(Module):
    def __init__(self, config: ModelConfig, prefix: str, quant_config: Mxfp4Config | None):
        self.num_heads = config.num_attention_heads
        self.num_kv_heads = config.num_key_value_heads
        self.head_dim = config.head_dim
        self.rope_theta = config.rope_theta
        q_size, kv_size = self.num_heads * self.head_dim, self.num_kv_heads * self.head_dim
        self.qkv_proj = Linear(config.hidden_size, [q_size, kv_size, kv_size], f"{prefix}.qkv_proj",
                               quant_config, shard_ids=["q", "k", "v"])
        self.o_proj = Linear(q_size, [config.hidden_size], f"{prefix}.o_proj", quant_config)

    def __call__(self, x: np.ndarray, positions: np.ndarray, cache: KVCache) -> np.ndarray:
        tokens = x.shape[0]
        q_size, kv_size = self.num_heads * self.head_dim, self.num_kv_heads * self.head_dim
        qkv = self.qkv_proj(x)
        q = qkv[:, :q_size].reshape(tokens, self.num_heads, self.head_dim)
        k = qkv[:, q_size:q_size + kv_size].reshape(tokens, self.num_kv_heads, self.head_dim)
        v = qkv[:, q_size + kv_size:].reshape(tokens, self.num_kv_heads, self.head_dim)
        q, k = rotary(q, positions, self.rope_theta), rotary(k, positions, self.rope_theta)
        keys, values = cache.append(k, v)
        group = self.num_heads // self.num_kv_heads
        keys = np.repeat(keys, group, axis=1).transpose(1, 2, 0)        # [heads, dim, ctx]
        values = np.repeat(values, group, axis=1).transpose(1, 0, 2)    # [heads, ctx, dim]
        # A Python float keeps float32 (a numpy float64 scalar would promote everything to float64).
        scores = (q.transpose(1, 0, 2) @ keys) * (1.0 / math.sqrt(self.head_dim))  # [heads, tokens, ctx]
        ctx = keys.shape[-1]
        causal = np.arange(ctx)[None, :] > (ctx - tokens + np.arange(tokens))[:, None]
        scores[:, causal] = -np.inf
        scores -= scores.max(axis=-1, keepdims=True)
        np.exp(scores, out=scores)
        scores /= scores.sum(axis=-1, keepdims=True)
        out = (scores @ values).transpose(1, 0, 2).reshape(tokens, q_size)
        return self.o_proj(out)
