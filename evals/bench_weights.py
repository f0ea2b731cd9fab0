"""Time reading a 700B-shaped checkpoint's names and shapes, comparing them and deriving the MTP remap.

Writes a DeepSeek/GLM-shaped checkpoint (61 decoder layers + an MTP head stored as layer 61, 256
routed experts x 3 projections x (weight + weight_scale_inv) each, 163 shards) whose shards hold
real safetensors headers and no tensor data, then prints how long each step takes.

    python3 evals/bench_weights.py [--layers 61] [--experts 256] [--shards 163] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from evals.weights_real.checkpoints import write_checkpoint as write_header_checkpoint
from tools.weights import compare, derive_remap, load_checkpoint

HIDDEN, MOE_INTER, BLOCK = 7168, 2048, 128
MAPPINGS = [("gate_up_proj", "gate_proj"), ("gate_up_proj", "up_proj")]


T = TypeVar("T")


def _layer(prefix: str, experts: int) -> dict[str, tuple[str, list[int]]]:
    t: dict[str, tuple[str, list[int]]] = {}
    for n in (
        "input_layernorm",
        "post_attention_layernorm",
        "self_attn.q_a_layernorm",
        "self_attn.kv_a_layernorm",
    ):
        t[f"{prefix}.{n}.weight"] = ("BF16", [HIDDEN])
    for n, shape in (
        ("q_a_proj", [1536, HIDDEN]),
        ("q_b_proj", [24576, 1536]),
        ("kv_a_proj_with_mqa", [576, HIDDEN]),
        ("kv_b_proj", [32768, 512]),
        ("o_proj", [HIDDEN, 16384]),
    ):
        t[f"{prefix}.self_attn.{n}.weight"] = ("F8_E4M3", shape)
        t[f"{prefix}.self_attn.{n}.weight_scale_inv"] = (
            "F32",
            [-(-shape[0] // BLOCK), -(-shape[1] // BLOCK)],
        )
    t[f"{prefix}.mlp.gate.weight"] = ("BF16", [experts, HIDDEN])
    t[f"{prefix}.mlp.gate.e_score_correction_bias"] = ("F32", [experts])
    owners = [f"experts.{e}" for e in range(experts)] + ["shared_experts"]
    for owner in owners:
        for proj, shape in (
            ("gate_proj", [MOE_INTER, HIDDEN]),
            ("up_proj", [MOE_INTER, HIDDEN]),
            ("down_proj", [HIDDEN, MOE_INTER]),
        ):
            t[f"{prefix}.mlp.{owner}.{proj}.weight"] = ("F8_E4M3", shape)
            t[f"{prefix}.mlp.{owner}.{proj}.weight_scale_inv"] = (
                "F32",
                [shape[0] // BLOCK, shape[1] // BLOCK],
            )
    return t


def build_tensors(layers: int, experts: int) -> dict[str, tuple[str, list[int]]]:
    """Every tensor of the checkpoint: name -> (safetensors dtype, shape)."""
    t = {
        "model.embed_tokens.weight": ("BF16", [129280, HIDDEN]),
        "model.norm.weight": ("BF16", [HIDDEN]),
        "lm_head.weight": ("BF16", [129280, HIDDEN]),
    }
    for i in range(layers + 1):  # layer `layers` is the MTP head
        t.update(_layer(f"model.layers.{i}", experts))
    mtp = f"model.layers.{layers}"
    for n, shape in (
        ("enorm.weight", [HIDDEN]),
        ("hnorm.weight", [HIDDEN]),
        ("eh_proj.weight", [HIDDEN, 2 * HIDDEN]),
        ("shared_head.norm.weight", [HIDDEN]),
    ):
        t[f"{mtp}.{n}"] = ("BF16", shape)
    return t


def write_checkpoint(root: Path, tensors: dict[str, tuple[str, list[int]]], shards: int, layers: int) -> None:
    """Shards with real headers (data offsets included, tensor bytes omitted) and the index."""
    write_header_checkpoint(
        root, {"architectures": ["DeepseekV3ForCausalLM"], "num_hidden_layers": layers}, tensors, shards
    )


def framework_params(tensors: dict, layers: int) -> dict[str, dict]:
    """What an sglang-like framework registers: fused gate_up, the MTP head as model.mtp.*."""
    out = {}
    for name, (dtype, shape) in tensors.items():
        name = name.replace(f"model.layers.{layers}.mlp.shared_experts.", "model.mtp.mlp.shared_expert.")
        name = name.replace(f"model.layers.{layers}.", "model.mtp.")
        if "up_proj" in name:
            continue
        out[name.replace("gate_proj", "gate_up_proj")] = {"dtype": dtype, "shape": shape}
    return out


def _time(fn: Callable[[], T], repeat: int) -> tuple[float, float, T]:
    """Median wall and CPU seconds of `repeat` (at least one) runs, the last result (CPU time is what a
    busy machine distorts least)."""
    walls: list[float] = []
    cpus: list[float] = []
    results: list[T] = []
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        results = [fn()]  # the last only: earlier ones are freed as before
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus), results[-1]


def _row(what: str, wall: float, cpu: float, note: str) -> None:
    print(f"{what:<32} wall {wall * 1e3:8.1f} ms  cpu {cpu * 1e3:8.1f} ms  ({note})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=61)
    ap.add_argument("--experts", type=int, default=256)
    ap.add_argument("--shards", type=int, default=163)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    tensors = build_tensors(args.layers, args.experts)
    expected = framework_params(tensors, args.layers)
    with tempfile.TemporaryDirectory(prefix="rocport-bench-weights-") as tmp:
        root = Path(tmp)
        write_checkpoint(root, tensors, args.shards, args.layers)
        index_mb = (root / "model.safetensors.index.json").stat().st_size / 1e6
        print(
            f"checkpoint: {len(tensors)} tensors, {args.shards} shards, index {index_mb:.1f} MB; "
            f"framework expects {len(expected)} params"
        )
        w_names, c_names, ck = _time(lambda: load_checkpoint(root, shapes=False), args.repeat)
        _row("names from the index only", w_names, c_names, f"{len(ck.tensors)} names")
        w_shapes, c_shapes, ck = _time(lambda: load_checkpoint(root, shapes=True), args.repeat)
        _row("names+dtypes+shapes (headers)", w_shapes, c_shapes, f"{len(ck.shards)} shard headers")
        w_cmp, c_cmp, report = _time(lambda: compare(ck, expected), args.repeat)
        _row(
            "compare with expected params",
            w_cmp,
            c_cmp,
            f"{len(report.missing)} missing, "
            f"{len(report.unexpected)} unexpected, {len(report.groups)} groups",
        )
        w_remap, c_remap, remap = _time(
            lambda: derive_remap(ck.names, expected, MAPPINGS), max(1, args.repeat // 2)
        )
        rules = ", ".join(f"{r.checkpoint} -> {r.framework}" for r in remap.rules)
        _row("derive the MTP remap", w_remap, c_remap, rules)
        _row(
            "total shapes+compare+remap",
            w_shapes + w_cmp + w_remap,
            c_shapes + c_cmp + c_remap,
            "one weight check",
        )
        print(f"load average while measuring: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
