"""Header-only checkpoints with the real tensor-name layout of open MoE models with MTP heads.

Names and shapes follow each model's published config.json and its Hugging Face checkpoint layout
(GLM-4.5: `model.layers.<N>.*` for the MTP head at N = num_hidden_layers, with enorm/hnorm/eh_proj/
shared_head; DeepSeek-V3: the same MTP layout, MLA attention (q_a/q_b/kv_a_proj_with_mqa/kv_b), block-FP8
weights with `weight_scale_inv`; Qwen3-MoE: no shared experts, no MTP). Shards hold real safetensors headers
and a sparse data region of the declared size (no bytes written), so a 92-layer, 160-expert checkpoint takes a few
megabytes of disk.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

_BYTES = {"BF16": 2, "F32": 4, "F8_E4M3": 1, "U8": 1}


def _mla(p: str, c: dict, t: dict) -> None:
    """DeepSeek-V2/V3 multi-head latent attention: low-rank q and compressed kv with a rope part."""
    h, heads, rope = c["hidden_size"], c["num_attention_heads"], c["qk_rope_head_dim"]
    q_rank, kv_rank, nope, v = c["q_lora_rank"], c["kv_lora_rank"], c["qk_nope_head_dim"], c["v_head_dim"]
    t[f"{p}.self_attn.q_a_proj.weight"] = ("BF16", [q_rank, h])
    t[f"{p}.self_attn.q_a_layernorm.weight"] = ("BF16", [q_rank])
    t[f"{p}.self_attn.q_b_proj.weight"] = ("BF16", [heads * (nope + rope), q_rank])
    t[f"{p}.self_attn.kv_a_proj_with_mqa.weight"] = ("BF16", [kv_rank + rope, h])
    t[f"{p}.self_attn.kv_a_layernorm.weight"] = ("BF16", [kv_rank])
    t[f"{p}.self_attn.kv_b_proj.weight"] = ("BF16", [heads * (nope + v), kv_rank])
    t[f"{p}.self_attn.o_proj.weight"] = ("BF16", [h, heads * v])
    t[f"{p}.input_layernorm.weight"] = ("BF16", [h])
    t[f"{p}.post_attention_layernorm.weight"] = ("BF16", [h])


def _attention(p: str, c: dict, t: dict) -> None:
    if c.get("kv_lora_rank"):
        _mla(p, c, t)
        return
    hd = c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]
    h, q, kv = c["hidden_size"], c["num_attention_heads"] * hd, c["num_key_value_heads"] * hd
    for proj, rows in (("q_proj", q), ("k_proj", kv), ("v_proj", kv)):
        t[f"{p}.self_attn.{proj}.weight"] = ("BF16", [rows, h])
        if c.get("attention_bias"):
            t[f"{p}.self_attn.{proj}.bias"] = ("BF16", [rows])
    t[f"{p}.self_attn.o_proj.weight"] = ("BF16", [h, q])
    if c.get("use_qk_norm") or c.get("model_type") == "qwen3_moe":
        t[f"{p}.self_attn.q_norm.weight"] = ("BF16", [hd])
        t[f"{p}.self_attn.k_norm.weight"] = ("BF16", [hd])
    t[f"{p}.input_layernorm.weight"] = ("BF16", [h])
    t[f"{p}.post_attention_layernorm.weight"] = ("BF16", [h])


def _mlp(p: str, inter: int, h: int, t: dict) -> None:
    t[f"{p}.gate_proj.weight"] = ("BF16", [inter, h])
    t[f"{p}.up_proj.weight"] = ("BF16", [inter, h])
    t[f"{p}.down_proj.weight"] = ("BF16", [h, inter])


def _moe(p: str, c: dict, t: dict, shared_prefix: str | None = None) -> None:
    h, experts = c["hidden_size"], c.get("n_routed_experts") or c["num_experts"]
    t[f"{p}.mlp.gate.weight"] = ("BF16", [experts, h])
    if c.get("n_group") is not None:  # DeepSeek-style noaux_tc routing
        t[f"{p}.mlp.gate.e_score_correction_bias"] = ("F32", [experts])
    for e in range(experts):
        _mlp(f"{p}.mlp.experts.{e}", c["moe_intermediate_size"], h, t)
    if c.get("n_shared_experts"):
        _mlp(
            shared_prefix or f"{p}.mlp.shared_experts",
            c["moe_intermediate_size"] * c["n_shared_experts"],
            h,
            t,
        )


def build_tensors(config: dict, mtp_shared_prefix: str | None = None) -> dict[str, tuple[str, list[int]]]:
    """Every tensor name -> (safetensors dtype, shape); `mtp_shared_prefix` moves the MTP shared experts."""
    c, t = config, {}
    h, vocab, layers = c["hidden_size"], c["vocab_size"], c["num_hidden_layers"]
    t["model.embed_tokens.weight"] = ("BF16", [vocab, h])
    dense = c.get("first_k_dense_replace", 0)
    for i in range(layers + (c.get("num_nextn_predict_layers") or 0)):
        p = f"model.layers.{i}"
        _attention(p, c, t)
        if i < dense:
            _mlp(f"{p}.mlp", c["intermediate_size"], h, t)
        else:
            _moe(p, c, t, mtp_shared_prefix.format(layer=i) if mtp_shared_prefix and i >= layers else None)
        if i >= layers:  # the MTP/nextn head, stored as one more decoder layer
            for n, shape in (
                ("enorm.weight", [h]),
                ("hnorm.weight", [h]),
                ("eh_proj.weight", [h, 2 * h]),
                ("shared_head.norm.weight", [h]),
                ("shared_head.head.weight", [vocab, h]),
                ("embed_tokens.weight", [vocab, h]),
            ):
                t[f"{p}.{n}"] = ("BF16", shape)
    t["model.norm.weight"] = ("BF16", [h])
    if not c.get("tie_word_embeddings"):
        t["lm_head.weight"] = ("BF16", [vocab, h])
    return t


def quantize_fp8(tensors: dict, keep: list[str], block: int = 128) -> dict:
    """Block-FP8 layout (DeepSeek/GLM-FP8): every linear weight F8_E4M3 with an F32 `weight_scale_inv`,
    except modules whose name starts with an entry of `keep` (the checkpoint's exclusion list) and
    embeddings, norms, router gates, the MTP head's eh_proj and the LM head."""
    out = {}
    for name, (dtype, shape) in tensors.items():
        module = name.rsplit(".", 1)[0]
        # eh_proj of the MTP head is a plain Linear in sglang and vLLM: it stays bf16
        leaf = module.rsplit(".", 1)[-1]
        linear = leaf.endswith(("_proj", "_proj_with_mqa")) and len(shape) == 2 and leaf != "eh_proj"
        if not linear or any(module == k or module.startswith(k + ".") for k in keep):
            out[name] = (dtype, shape)
            continue
        out[name] = ("F8_E4M3", shape)
        out[module + ".weight_scale_inv"] = ("F32", [-(-shape[0] // block), -(-shape[1] // block)])
    return out


def write_checkpoint(root: Path, config: dict, tensors: dict, shards: int = 8) -> Path:
    """config.json, the index and `shards` safetensors files holding headers only."""
    root.mkdir(parents=True, exist_ok=True)
    names = list(tensors)
    per = -(-len(names) // shards)
    weight_map = {}
    for s in range(shards):
        fname = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        header: dict[str, dict[str, object]] = {"__metadata__": {"format": "pt"}}
        offset = 0
        for name in names[s * per : (s + 1) * per]:
            dtype, shape = tensors[name]
            size = _BYTES[dtype]
            for d in shape:
                size *= d
            header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
            offset += size
            weight_map[name] = fname
        raw = json.dumps(header).encode()
        with (root / fname).open("wb") as fh:
            fh.write(struct.pack("<Q", len(raw)) + raw)
            fh.truncate(8 + len(raw) + offset)  # sparse: the declared data extent, no bytes on disk
    (root / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    (root / "config.json").write_text(json.dumps(config, indent=1))
    return root
