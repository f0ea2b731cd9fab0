"""Linear layers, plain or MXFP4-quantized, with sglang-style stacked (fused) shards."""
from __future__ import annotations

import numpy as np

from tinyserve.nn import Module, Parameter, check_shape
from tinyserve.quant import GROUP_SIZE, Mxfp4Config, dequantize_mxfp4


class Linear(Module):
    """y = x @ W.T. Output rows may be split into named shards (q/k/v, gate/up) loaded one by one.

    Quantized unless `quant_config` is None or excludes `prefix` (the registered module name).
    """

    def __init__(self, in_features: int, shard_sizes: list[int], prefix: str,
                 quant_config: Mxfp4Config | None = None, shard_ids: list | None = None):
        self.prefix = prefix
        self.shard_sizes = list(shard_sizes)
        self.shard_ids = list(shard_ids) if shard_ids is not None else list(range(len(shard_sizes)))
        out_features = sum(shard_sizes)
        self.quantized = quant_config is not None and not quant_config.is_excluded(prefix)
        if self.quantized:
            self.weight = Parameter((out_features, in_features // 2), "uint8")
            self.weight_scale = Parameter((out_features, in_features // GROUP_SIZE), "uint8")
            self.weight_scale.weight_loader = self.weight_loader
        else:
            self.weight = Parameter((out_features, in_features), "bfloat16")
        self.weight.weight_loader = self.weight_loader
        self._dense: np.ndarray | None = None

    def weight_loader(self, param: Parameter, loaded_weight: np.ndarray, shard_id=None) -> None:
        """Copy one checkpoint tensor (or one shard of a fused one) into `param`."""
        if shard_id is None:
            target = param.data
        else:
            index = self.shard_ids.index(shard_id)
            start = sum(self.shard_sizes[:index])
            target = param.data[start:start + self.shard_sizes[index]]
        check_shape(param, target.shape, loaded_weight)
        target[...] = loaded_weight
        self._dense = None

    def dense_weight(self) -> np.ndarray:
        if self._dense is None:
            self._dense = (dequantize_mxfp4(self.weight.data, self.weight_scale.data) if self.quantized
                           else self.weight.data)
        return self._dense

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return x @ self.dense_weight().T
