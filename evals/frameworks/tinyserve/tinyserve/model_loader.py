"""Build a model from a checkpoint directory: config -> registry -> layers -> load_weights."""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from tinyserve import safetensors_io
from tinyserve.config import ModelConfig
from tinyserve.models import resolve_model_class
from tinyserve.quant import Mxfp4Config
from tinyserve.safetensors_io import INDEX_FILE


def shard_files(model_path: str | Path) -> list[Path]:
    """The checkpoint's safetensors shards, in the order the index lists them."""
    root = Path(model_path)
    index = root / INDEX_FILE
    if index.is_file():
        weight_map = json.loads(index.read_text())["weight_map"]
        names = sorted(set(weight_map.values()))
    else:
        names = sorted(p.name for p in root.glob("*.safetensors"))
    if not names:
        raise safetensors_io.CheckpointError(f"no safetensors files in {root}")
    return [root / n for n in names]


def iterate_weights(model_path: str | Path) -> Iterator[tuple[str, np.ndarray]]:
    """(checkpoint name, tensor) for every tensor of every shard."""
    for path in shard_files(model_path):
        for name, _dtype, array in safetensors_io.iter_file(path):
            yield name, array


def build_model(model_path: str | Path):
    """The registered model for the checkpoint's config, with parameters allocated but not loaded."""
    config = ModelConfig.from_model_path(model_path)
    model_class = resolve_model_class(config.architectures)
    return model_class(config, Mxfp4Config.from_config(config.quantization_config))


def load_model(model_path: str | Path):
    """Build the model and load every checkpoint tensor through its load_weights."""
    model = build_model(model_path)
    model.load_weights(iterate_weights(model_path))
    return model
