"""Write a random-weight checkpoint: sharded safetensors + model.safetensors.index.json + config.json.

    python3 -m tinyserve.make_checkpoint --out /models/tiny --layers 2 --hidden 64 --experts 4

Names follow GLM/DeepSeek checkpoints: the MTP (nextn) head is stored as model.layers.<layers>.*, routed
experts are MXFP4 (uint8 packed two per byte + E8M0 scales), everything in the exclusion list is bf16.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from tinyserve import safetensors_io
from tinyserve.quant import GROUP_SIZE, quantize_mxfp4
from tinyserve.safetensors_io import INDEX_FILE

ARCHITECTURE = "TinyGlmMoeForCausalLM"


def make_config(args: argparse.Namespace) -> dict:
    config = {
        "architectures": [ARCHITECTURE], "model_type": "tiny_glm_moe",
        "vocab_size": args.vocab, "hidden_size": args.hidden, "num_hidden_layers": args.layers,
        "num_attention_heads": args.heads, "num_key_value_heads": args.kv_heads,
        "head_dim": args.hidden // args.heads, "moe_intermediate_size": args.intermediate,
        "n_routed_experts": args.experts, "n_shared_experts": 1, "num_experts_per_tok": args.top_k,
        "norm_topk_prob": True, "num_nextn_predict_layers": 1, "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0, "max_position_embeddings": 32768, "bos_token_id": 257,
        "eos_token_id": 256, "torch_dtype": "bfloat16",
    }
    if args.quant == "mxfp4":
        config["quantization_config"] = {"quant_method": "mxfp4", "modules_to_not_convert": excluded(args.layers)}
    return config


def excluded(layers: int) -> list[str]:
    """Everything but the routed experts stays bf16, named the checkpoint's way."""
    names = ["model.embed_tokens", "lm_head"]
    for i in range(layers + 1):
        names += [f"model.layers.{i}.self_attn", f"model.layers.{i}.mlp.gate",
                  f"model.layers.{i}.mlp.shared_experts"]
    return names + [f"model.layers.{layers}.eh_proj", f"model.layers.{layers}.shared_head.head"]


class Writer:
    """Collects tensors per shard; bf16 values or MXFP4-packed weights."""

    def __init__(self, rng: np.random.Generator, quantize_experts: bool):
        self.rng = rng
        self.quantize_experts = quantize_experts
        self.shards: list[dict] = [{}]

    def new_shard(self) -> None:
        if self.shards[-1]:
            self.shards.append({})

    def norm(self, name: str, size: int) -> None:
        self.shards[-1][name] = ("BF16", 1.0 + 0.05 * self.rng.standard_normal(size).astype(np.float32))

    def linear(self, name: str, out_features: int, in_features: int, quantized: bool = False) -> None:
        w = self.rng.standard_normal((out_features, in_features)).astype(np.float32) / np.sqrt(in_features)
        if quantized and self.quantize_experts:
            packed, scales = quantize_mxfp4(w)
            self.shards[-1][f"{name}.weight"] = ("U8", packed)
            self.shards[-1][f"{name}.weight_scale"] = ("U8", scales)
        else:
            self.shards[-1][f"{name}.weight"] = ("BF16", w)

    def decoder_layer(self, prefix: str, a: argparse.Namespace) -> None:
        head_dim = a.hidden // a.heads
        self.norm(f"{prefix}.input_layernorm.weight", a.hidden)
        for proj, rows in (("q_proj", a.heads * head_dim), ("k_proj", a.kv_heads * head_dim),
                           ("v_proj", a.kv_heads * head_dim)):
            self.linear(f"{prefix}.self_attn.{proj}", rows, a.hidden)
        self.linear(f"{prefix}.self_attn.o_proj", a.hidden, a.heads * head_dim)
        self.norm(f"{prefix}.post_attention_layernorm.weight", a.hidden)
        self.linear(f"{prefix}.mlp.gate", a.experts, a.hidden)
        for e in range(a.experts):
            self.mlp(f"{prefix}.mlp.experts.{e}", a.hidden, a.intermediate, quantized=True)
        self.mlp(f"{prefix}.mlp.shared_experts", a.hidden, a.intermediate, quantized=False)

    def mlp(self, prefix: str, hidden: int, intermediate: int, quantized: bool) -> None:
        self.linear(f"{prefix}.gate_proj", intermediate, hidden, quantized)
        self.linear(f"{prefix}.up_proj", intermediate, hidden, quantized)
        self.linear(f"{prefix}.down_proj", hidden, intermediate, quantized)


def write_checkpoint(args: argparse.Namespace) -> Path:
    """Generate and write the checkpoint; returns the output directory."""
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    writer = Writer(np.random.default_rng(args.seed), args.quant == "mxfp4")
    writer.linear("model.embed_tokens", args.vocab, args.hidden)
    for i in range(args.layers):
        writer.new_shard()
        writer.decoder_layer(f"model.layers.{i}", args)
    writer.new_shard()
    mtp = f"model.layers.{args.layers}"
    writer.norm(f"{mtp}.enorm.weight", args.hidden)
    writer.norm(f"{mtp}.hnorm.weight", args.hidden)
    writer.linear(f"{mtp}.eh_proj", args.hidden, 2 * args.hidden)
    writer.decoder_layer(mtp, args)
    writer.norm(f"{mtp}.shared_head.norm.weight", args.hidden)
    writer.linear(f"{mtp}.shared_head.head", args.vocab, args.hidden)
    writer.norm("model.norm.weight", args.hidden)
    writer.linear("lm_head", args.vocab, args.hidden)
    weight_map, total = {}, len(writer.shards)
    for n, tensors in enumerate(writer.shards, start=1):
        fname = f"model-{n:05d}-of-{total:05d}.safetensors"
        safetensors_io.write_file(out / fname, tensors)
        weight_map.update({name: fname for name in tensors})
    size = sum((out / f).stat().st_size for f in set(weight_map.values()))
    (out / INDEX_FILE).write_text(json.dumps({"metadata": {"total_size": size}, "weight_map": weight_map}, indent=1))
    (out / "config.json").write_text(json.dumps(make_config(args), indent=1))
    return out


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python3 -m tinyserve.make_checkpoint", description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--kv-heads", type=int, default=2)
    parser.add_argument("--experts", type=int, default=4)
    parser.add_argument("--top-k", type=int, default=2)
    parser.add_argument("--intermediate", type=int, default=32)
    parser.add_argument("--vocab", type=int, default=320)
    parser.add_argument("--quant", choices=("mxfp4", "none"), default="mxfp4")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    for name in ("hidden", "intermediate"):
        if getattr(args, name) % GROUP_SIZE:
            parser.error(f"--{name} must be a multiple of {GROUP_SIZE} (MXFP4 scale groups)")
    if args.hidden % args.heads or args.heads % args.kv_heads:
        parser.error("--hidden must divide by --heads and --heads by --kv-heads")
    return args


def main(argv: list[str] | None = None) -> int:
    out = write_checkpoint(parse_args(argv))
    print(f"wrote checkpoint to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
