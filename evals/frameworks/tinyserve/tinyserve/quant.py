"""MXFP4 quantization: 4-bit e2m1 values packed two per byte, one power-of-two scale per 32 values."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

GROUP_SIZE = 32
# The eight non-negative e2m1 magnitudes; bit 3 of a nibble is the sign.
FP4_VALUES = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0], dtype=np.float32)
FP4_TABLE = np.concatenate([FP4_VALUES, -FP4_VALUES])


@dataclass
class Mxfp4Config:
    """The checkpoint's quantization_config: which modules are MXFP4 and which stay full width."""

    modules_to_not_convert: list[str] = field(default_factory=list)

    @classmethod
    def from_config(cls, data: dict[str, Any] | None) -> Mxfp4Config | None:
        if not data:
            return None
        if data.get("quant_method") != "mxfp4":
            raise ValueError(f"unsupported quant_method {data.get('quant_method')!r}; tinyserve supports mxfp4")
        return cls(list(data.get("modules_to_not_convert") or []))

    def is_excluded(self, prefix: str) -> bool:
        """True when the module at `prefix` (a registered module name) stays unquantized."""
        return any(prefix == m or prefix.startswith(m + ".") for m in self.modules_to_not_convert)

    def remapped(self, rename: Callable[[str], str]) -> Mxfp4Config:
        """The same config with exclusion names translated by `rename` (checkpoint -> registered names)."""
        return Mxfp4Config([rename(m) for m in self.modules_to_not_convert])


def quantize_mxfp4(weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[N, K] float -> (packed uint8 [N, K/2], E8M0 scales uint8 [N, K/32])."""
    n, k = weight.shape
    groups = weight.reshape(n, k // GROUP_SIZE, GROUP_SIZE)
    amax = np.maximum(np.abs(groups).max(axis=-1), 1e-30)
    exponent = np.clip(np.ceil(np.log2(amax / FP4_VALUES[-1])), -127, 127)
    scaled = groups / np.exp2(exponent)[..., None]
    codes = np.abs(np.abs(scaled)[..., None] - FP4_VALUES).argmin(axis=-1).astype(np.uint8)
    codes |= (scaled < 0).astype(np.uint8) << 3
    codes = codes.reshape(n, k)
    packed = codes[:, 0::2] | (codes[:, 1::2] << 4)
    return packed.astype(np.uint8), (exponent + 127).astype(np.uint8)


def dequantize_mxfp4(packed: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """(packed uint8 [N, K/2], scales uint8 [N, K/32]) -> float32 [N, K]."""
    n, half_k = packed.shape
    codes = np.empty((n, half_k * 2), dtype=np.uint8)
    codes[:, 0::2] = packed & 0x0F
    codes[:, 1::2] = packed >> 4
    values = FP4_TABLE[codes].reshape(n, -1, GROUP_SIZE)
    scale = np.exp2(scales.astype(np.float32) - 127.0)
    return (values * scale[..., None]).reshape(n, half_k * 2)
