"""RMSNorm and the token embedding."""
from __future__ import annotations

import numpy as np

from tinyserve.nn import Module, Parameter


class RMSNorm(Module):
    def __init__(self, hidden_size: int, eps: float):
        self.weight = Parameter((hidden_size,), "bfloat16")
        self.eps = eps

    def __call__(self, x: np.ndarray) -> np.ndarray:
        inv_rms = 1.0 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + self.eps)
        return x * inv_rms * self.weight.data


class Embedding(Module):
    def __init__(self, vocab_size: int, hidden_size: int):
        self.weight = Parameter((vocab_size, hidden_size), "bfloat16")

    def __call__(self, token_ids: np.ndarray) -> np.ndarray:
        return self.weight.data[token_ids]
