"""The model's config.json, as the framework reads it."""
from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any


class ConfigError(ValueError):
    """config.json is missing or lacks a field the model needs."""


@dataclass
class ModelConfig:
    """The fields of a GLM/DeepSeek-style MoE config that tinyserve uses."""

    architectures: list[str]
    vocab_size: int = 320
    hidden_size: int = 64
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    head_dim: int = 16
    moe_intermediate_size: int = 32
    n_routed_experts: int = 4
    n_shared_experts: int = 1
    num_experts_per_tok: int = 2
    norm_topk_prob: bool = True
    num_nextn_predict_layers: int = 1
    rms_norm_eps: float = 1e-5
    rope_theta: float = 10000.0
    max_position_embeddings: int = 32768
    bos_token_id: int = 257
    eos_token_id: int = 256
    torch_dtype: str = "bfloat16"
    quantization_config: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelConfig:
        known = {f.name for f in fields(cls)} - {"extra"}
        if "architectures" not in data:
            raise ConfigError("config.json has no 'architectures' list")
        return cls(**{k: v for k, v in data.items() if k in known},
                   extra={k: v for k, v in data.items() if k not in known})

    @classmethod
    def from_model_path(cls, model_path: str | Path) -> ModelConfig:
        path = Path(model_path) / "config.json"
        if not path.is_file():
            raise ConfigError(f"{path} not found: --model-path must be a checkpoint directory")
        return cls.from_dict(json.loads(path.read_text()))
