"""Tune the batched MoE kernel for one model's expert shape: time every block_m at every token
count M and write the fastest as tinyserve/layers/moe_configs/E=..,N=..,H=...json.

    python3 benchmarks/tune_moe.py --model-path DIR [--out-dir DIR] [--batch-sizes 1,16,64,256]

Like sglang's benchmark/kernels/fused_moe_triton/tuning_fused_moe_triton.py it needs only the
model's config.json (the shapes), not its weights: experts get random weights of those shapes.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tinyserve.config import ModelConfig
from tinyserve.layers import moe_kernels
from tinyserve.layers.moe import MLP, topk_softmax

BLOCK_M = (2, 8, 32, 128, 512)


def random_experts(config: ModelConfig, rng: np.random.Generator) -> list[MLP]:
    experts = []
    for e in range(config.n_routed_experts):
        mlp = MLP(config.hidden_size, config.moe_intermediate_size, f"experts.{e}", None)
        for _, param in mlp.named_parameters():
            param.data[...] = rng.standard_normal(param.data.shape).astype(param.data.dtype) * 0.05
        experts.append(mlp)
    return experts


def time_kernel(experts, x, weights, ids, kernel: moe_kernels.MoeKernel, reps: int) -> float:
    """Median microseconds of `reps` expert passes after one warm-up pass."""
    moe_kernels.run_experts(experts, x, weights, ids, kernel)
    samples = []
    for _ in range(reps):
        t0 = time.perf_counter()
        moe_kernels.run_experts(experts, x, weights, ids, kernel)
        samples.append(time.perf_counter() - t0)
    return float(np.median(samples)) * 1e6


def tune(config: ModelConfig, batch_sizes: list[int], reps: int) -> dict[str, dict]:
    rng = np.random.default_rng(0)
    experts = random_experts(config, rng)
    table = {}
    for m in batch_sizes:
        x = rng.standard_normal((m, config.hidden_size)).astype(np.float32)
        weights, ids = topk_softmax(rng.standard_normal((m, config.n_routed_experts)), config.num_experts_per_tok, True)
        timed = {b: time_kernel(experts, x, weights, ids, moe_kernels.MoeKernel("batched", {m: b}), reps)
                 for b in BLOCK_M}
        best = min(timed, key=timed.get)
        default = time_kernel(experts, x, weights, ids, moe_kernels.MoeKernel(), reps)
        table[str(m)] = {"block_m": best, "us": round(timed[best], 1), "default_us": round(default, 1)}
        print(f"M={m:<5} best block_m={best:<4} {timed[best]:9.1f} us   default block_m="
              f"{moe_kernels.DEFAULT_BLOCK_M}: {default:9.1f} us   ({default / timed[best]:.2f}x)", flush=True)
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-path", required=True)
    parser.add_argument("--out-dir", default=str(moe_kernels.CONFIG_DIR))
    parser.add_argument("--batch-sizes", default="1,16,64,256")
    parser.add_argument("--reps", type=int, default=15)
    args = parser.parse_args(argv)
    config = ModelConfig.from_model_path(args.model_path)
    table = tune(config, [int(m) for m in args.batch_sizes.split(",")], args.reps)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / moe_kernels.config_name(config.n_routed_experts, config.moe_intermediate_size, config.hidden_size)
    path.write_text(json.dumps(table, indent=2) + "\n")
    print(f"Writing best config to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
