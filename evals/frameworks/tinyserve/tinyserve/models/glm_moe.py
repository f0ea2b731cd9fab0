"""A tiny GLM/DeepSeek-style MoE decoder with an MTP (nextn) head, loaded the way sglang loads it."""
from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from tinyserve.config import ModelConfig
from tinyserve.layers.attention import Attention, KVCache
from tinyserve.layers.linear import Linear
from tinyserve.layers.moe import MLP, MoE
from tinyserve.layers.norm import Embedding, RMSNorm
from tinyserve.nn import Module, ModuleList
from tinyserve.quant import Mxfp4Config

# The checkpoint stores the MTP head under model.layers.<num_hidden_layers>.*, mixing head tensors with a
# decoder layer's tensors. tinyserve registers it as model.mtp.*: head tensors and the fused shared experts
# at the head level, everything else of the decoder layer under model.mtp.block.
MTP_SUBMODULES = (
    ("mlp.shared_experts", "shared_experts"),
    ("enorm", "enorm"),
    ("hnorm", "hnorm"),
    ("eh_proj", "eh_proj"),
    ("shared_head", "shared_head"),
)


class DecoderLayer(Module):
    def __init__(self, config: ModelConfig, prefix: str, quant_config: Mxfp4Config | None,
                 attn_quant_config: Mxfp4Config | None, with_shared_experts: bool = True):
        self.input_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.self_attn = Attention(config, f"{prefix}.self_attn", attn_quant_config)
        self.post_attention_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.mlp = MoE(config, f"{prefix}.mlp", quant_config, with_shared_experts)

    def __call__(self, x: np.ndarray, positions: np.ndarray, cache: KVCache,
                 shared_experts: MLP | None = None) -> np.ndarray:
        x = x + self.self_attn(self.input_layernorm(x), positions, cache)
        return x + self.mlp(self.post_attention_layernorm(x), shared_experts)


class SharedHead(Module):
    def __init__(self, config: ModelConfig):
        self.norm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.head = Linear(config.hidden_size, [config.vocab_size], "model.mtp.shared_head.head", None)


class MTPHead(Module):
    """Predicts the token after next from (embedding of next token, last hidden state)."""

    def __init__(self, config: ModelConfig, quant_config: Mxfp4Config | None):
        self.enorm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.hnorm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.eh_proj = Linear(2 * config.hidden_size, [config.hidden_size], "model.mtp.eh_proj", None)
        # Fused at the head level (not inside the block): the block's MoE calls these.
        self.shared_experts = MLP(config.hidden_size, config.moe_intermediate_size * config.n_shared_experts,
                                  "model.mtp.shared_experts", quant_config)
        self.block = DecoderLayer(config, "model.mtp.block", quant_config, None, with_shared_experts=False)
        self.shared_head = SharedHead(config)

    def __call__(self, embeds: np.ndarray, hidden: np.ndarray, positions: np.ndarray,
                 cache: KVCache) -> np.ndarray:
        x = self.eh_proj(np.concatenate([self.enorm(embeds), self.hnorm(hidden)], axis=-1))
        x = self.block(x, positions, cache, self.shared_experts)
        return self.shared_head.head(self.shared_head.norm(x))


class TinyGlmMoeModel(Module):
    def __init__(self, config: ModelConfig, quant_config: Mxfp4Config | None):
        self.embed_tokens = Embedding(config.vocab_size, config.hidden_size)
        self.layers = ModuleList([
            DecoderLayer(config, f"model.layers.{i}", quant_config, quant_config)
            for i in range(config.num_hidden_layers)])
        self.norm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.mtp = MTPHead(config, quant_config)


class TinyGlmMoeForCausalLM(Module):
    def __init__(self, config: ModelConfig, quant_config: Mxfp4Config | None = None):
        self.config = config
        # The checkpoint's exclusion list uses checkpoint names; layers are built under registered names.
        self.quant_config = quant_config.remapped(self.remap_checkpoint_name) if quant_config else None
        self.model = TinyGlmMoeModel(config, self.quant_config)
        self.lm_head = Linear(config.hidden_size, [config.vocab_size], "lm_head", self.quant_config)
        self.name_parameters()

    def remap_checkpoint_name(self, name: str) -> str:
        """Checkpoint name -> registered name: the MTP layer's model.layers.<N>.* moves to model.mtp.*."""
        mtp_prefix = f"model.layers.{self.config.num_hidden_layers}."
        if not name.startswith(mtp_prefix):
            return name
        rest = name[len(mtp_prefix):]
        for checkpoint_part, registered_part in MTP_SUBMODULES:
            if rest == checkpoint_part or rest.startswith(checkpoint_part + "."):
                return f"model.mtp.{registered_part}{rest[len(checkpoint_part):]}"
        return f"model.mtp.block.{rest}"

    def load_weights(self, weights: Iterable[tuple[str, np.ndarray]]) -> set[str]:
        """Copy checkpoint tensors into parameters; fused params take their shards one by one."""
        stacked_params_mapping = [
            # (param_name, shard_name, shard_id)
            ("qkv_proj", "q_proj", "q"),
            ("qkv_proj", "k_proj", "k"),
            ("qkv_proj", "v_proj", "v"),
            ("gate_up_proj", "gate_proj", 0),
            ("gate_up_proj", "up_proj", 1),
        ]
        params_dict = dict(self.named_parameters())
        loaded_params: set[str] = set()
        for name, loaded_weight in weights:
            name = self.remap_checkpoint_name(name)
            for param_name, shard_name, shard_id in stacked_params_mapping:
                if shard_name not in name:
                    continue
                name = name.replace(shard_name, param_name)
                param = params_dict[name]
                param.weight_loader(param, loaded_weight, shard_id)
                break
            else:
                param = params_dict[name]
                param.weight_loader(param, loaded_weight)
            loaded_params.add(name)
        not_loaded = sorted(set(params_dict) - loaded_params)
        if not_loaded:
            raise ValueError(f"Following weights were not initialized from checkpoint: {not_loaded}")
        return loaded_params

    def forward(self, token_ids: np.ndarray, start_pos: int, caches: list[KVCache]) -> np.ndarray:
        """Run new tokens through the decoder; returns the final hidden states [tokens, hidden]."""
        positions = np.arange(start_pos, start_pos + len(token_ids))
        x = self.model.embed_tokens(token_ids)
        for layer, cache in zip(self.model.layers, caches):
            x = layer(x, positions, cache)
        return self.model.norm(x)

    def logits(self, hidden: np.ndarray) -> np.ndarray:
        return self.lm_head(hidden)
