"""The routed-expert kernels the server can select (`--moe-runner-backend`), and their tuned configs.

`batched` groups each expert's tokens and multiplies them in blocks of `block_m` rows (numpy,
one matmul per block); `naive` runs every (token, expert) pair alone in a Python loop, the way an
untuned fallback path does. Both compute the same values; `batched` is several times faster on
prefill on the CPU, and issues far fewer expert calls, each of which the simulated device charges
as one kernel launch (scheduler.py). Per-shape configs (`block_m` per token count M) are JSON files named after the expert
shape, written by `benchmarks/tune_moe.py`, like sglang's fused_moe_triton configs.
"""
from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

log = logging.getLogger("tinyserve.moe")
BACKENDS = ("batched", "naive")
CONFIG_DIR = Path(__file__).resolve().parent / "moe_configs"
DEFAULT_BLOCK_M = 8


@dataclass
class MoeKernel:
    """The process-wide routed-expert kernel choice."""

    backend: str = "batched"
    block_m: dict[int, int] = field(default_factory=dict)
    """Tuned rows per matmul, by token count M (nearest M wins); empty: DEFAULT_BLOCK_M."""
    launches: int = 0
    """Expert calls issued so far: what a GPU pays a kernel launch for (the scheduler reads and resets it)."""

    def rows_per_block(self, m: int) -> int:
        if not self.block_m:
            return DEFAULT_BLOCK_M
        nearest = min(self.block_m, key=lambda k: abs(k - m))
        return self.block_m[nearest]


ACTIVE = MoeKernel()


def config_name(experts: int, intermediate: int, hidden: int) -> str:
    """File name of the tuned config for one expert shape: E experts, N intermediate, H hidden."""
    return f"E={experts},N={intermediate},H={hidden}.json"


def select(backend: str, experts: int, intermediate: int, hidden: int, config_dir: Path = CONFIG_DIR) -> MoeKernel:
    """Make `backend` the active kernel, with the tuned config for this shape when one exists."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown MoE runner backend {backend!r}; use one of {', '.join(BACKENDS)}")
    path = config_dir / config_name(experts, intermediate, hidden)
    block_m: dict[int, int] = {}
    if path.is_file():
        block_m = {int(m): int(c["block_m"]) for m, c in json.loads(path.read_text()).items()}
        log.info("MoE runner %s: tuned config %s", backend, path.name)
    else:
        log.warning("MoE runner %s: no tuned config %s; using block_m=%d (performance might be sub-optimal)",
                    backend, path.name, DEFAULT_BLOCK_M)
    ACTIVE.backend, ACTIVE.block_m = backend, block_m
    return ACTIVE


def run_experts(experts, x: np.ndarray, weights: np.ndarray, ids: np.ndarray,
                kernel: MoeKernel | None = None) -> np.ndarray:
    """Sum over each token's top-k experts of weight * expert(token), with the active kernel."""
    kernel, experts = kernel or ACTIVE, list(experts)
    if kernel.backend == "naive":
        out, launches = _naive(experts, x, weights, ids)
    else:
        out, launches = _batched(experts, x, weights, ids, kernel.rows_per_block(x.shape[0]))
    kernel.launches += launches
    return out


def _naive(experts, x: np.ndarray, weights: np.ndarray, ids: np.ndarray) -> tuple[np.ndarray, int]:
    out = np.zeros_like(x)
    for t in range(x.shape[0]):
        for slot in range(ids.shape[1]):
            out[t] += experts[int(ids[t, slot])](x[t:t + 1])[0] * weights[t, slot]
    return out, ids.size


def _batched(experts, x: np.ndarray, weights: np.ndarray, ids: np.ndarray, block_m: int) -> tuple[np.ndarray, int]:
    out, launches = np.zeros_like(x), 0
    for e, expert in enumerate(experts):
        rows, slots = np.nonzero(ids == e)
        for lo in range(0, rows.size, block_m):
            r, s = rows[lo:lo + block_m], slots[lo:lo + block_m]
            out[r] += expert(x[r]) * weights[r, s][:, None]  # top-k ids are distinct: no duplicate rows
            launches += 1
    return out, launches
