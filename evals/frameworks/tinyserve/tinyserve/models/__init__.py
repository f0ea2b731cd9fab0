"""The model registry: config.json `architectures` name -> model class."""
from __future__ import annotations

from tinyserve.models.glm_moe import TinyGlmMoeForCausalLM

ModelRegistry = {
    "TinyGlmMoeForCausalLM": TinyGlmMoeForCausalLM,
}


def resolve_model_class(architectures: list[str]):
    """The first registered architecture of the config, or sglang's 'not supported' error."""
    for arch in architectures:
        if arch in ModelRegistry:
            return ModelRegistry[arch]
    raise ValueError(f"Model architectures {architectures} are not supported for now. "
                     f"Supported architectures: {sorted(ModelRegistry)}")
