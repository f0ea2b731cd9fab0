"""tinyserve's configuration-dependent serving: the two MoE kernels (same values, different cost),
the MoE tuning script, data-parallel worker processes behind the router, and the scheduler's
batching, all over real processes and HTTP."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sandboxes.local import LocalSandbox
from tests.evals import test_tinyserve as base
from tests.evals.test_tinyserve import post, run_py, sse_events
from tools.serve import free_port

pytestmark = pytest.mark.timeout(600)
framework, checkpoint = (
    base.framework,
    base.checkpoint,
)  # the same module-scoped fixtures, set up for this module


def test_naive_and_batched_kernels_compute_the_same_experts_with_different_launch_counts(framework):
    script = """
import numpy as np
from tinyserve.config import ModelConfig
from tinyserve.layers import moe_kernels
from tinyserve.layers.moe import topk_softmax
from benchmarks.tune_moe import random_experts
config = ModelConfig(architectures=["TinyGlmMoeForCausalLM"], hidden_size=64, moe_intermediate_size=32,
                     n_routed_experts=4, num_experts_per_tok=2)
rng = np.random.default_rng(1)
experts = random_experts(config, rng)
x = rng.standard_normal((32, 64)).astype(np.float32)
w, ids = topk_softmax(rng.standard_normal((32, 4)), 2, True)
naive, batched = moe_kernels.MoeKernel("naive"), moe_kernels.MoeKernel("batched", {32: 16})
a = moe_kernels.run_experts(experts, x, w, ids, naive)
b = moe_kernels.run_experts(experts, x, w, ids, batched)
print(float(np.abs(a - b).max()), naive.launches, batched.launches)
"""
    diff, naive, batched = run_py(framework, "-c", script).stdout.split()
    assert float(diff) < 1e-4
    assert int(naive) == 64 and int(batched) <= 8  # one call per (token, slot) against one per block


def test_the_moe_tuning_script_writes_a_per_shape_config_the_server_then_reads(
    framework, checkpoint, tmp_path
):
    out = tmp_path / "configs"
    proc = run_py(
        framework,
        "benchmarks/tune_moe.py",
        "--model-path",
        str(checkpoint),
        "--out-dir",
        str(out),
        "--batch-sizes",
        "1,64",
        "--reps",
        "3",
    )
    assert "best block_m=" in proc.stdout
    table = json.loads((out / "E=4,N=32,H=64.json").read_text())
    assert set(table) == {"1", "64"} and all(v["block_m"] in (2, 8, 32, 128, 512) for v in table.values())
    port = free_port()
    with LocalSandbox(framework) as box:
        service = box.start(
            f"{sys.executable} -m tinyserve.launch_server --model-path {checkpoint} --port {port} "
            f"--moe-config-dir {out}",
            name="tuned",
            port=port,
            health_path="/health",
            ready_timeout=60,
        )
        service.stop()
        assert "tuned config E=4,N=32,H=64.json" in service.logs()


def test_data_parallel_runs_worker_processes_behind_a_router_that_keeps_prefixes_on_one_cache(
    framework, checkpoint
):
    port = free_port()
    with LocalSandbox(framework) as box:
        service = box.start(
            f"{sys.executable} -m tinyserve.launch_server --model-path {checkpoint} --port {port} "
            "--dp 2 --max-running-requests 4",
            name="dp",
            port=port,
            health_path="/health",
            ready_timeout=120,
        )
        try:
            workers = subprocess.run(
                ["pgrep", "-P", str(service.pid), "-f", "tinyserve.launch_server"],
                capture_output=True,
                text=True,
                check=False,
            ).stdout.split()
            assert len(workers) == 2
            prefix = list(range(1, 49))
            for tail, cached in (([200], 0), ([201, 202], 48), ([203], 48)):
                body = {
                    "prompt": prefix + tail,
                    "max_tokens": 3,
                    "ignore_eos": True,
                    "stream": True,
                    "stream_options": {"include_usage": True},
                }
                status, raw = post(port, "/v1/completions", body)
                assert status == 200
                events = sse_events(raw)
                assert events[-1]["usage"]["prompt_tokens_details"]["cached_tokens"] == cached
        finally:
            service.stop()
        for pid in workers:  # the router takes its workers down with it
            assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()


def test_bad_scheduler_limits_are_usage_errors(framework, checkpoint):
    proc = run_py(
        framework,
        "-m",
        "tinyserve.launch_server",
        "--model-path",
        str(checkpoint),
        "--max-running-requests",
        "0",
        check=False,
    )
    assert proc.returncode == 2 and "must be at least 1" in proc.stderr
    proc = run_py(
        framework,
        "-m",
        "tinyserve.launch_server",
        "--model-path",
        str(checkpoint),
        "--moe-runner-backend",
        "cuda",
        check=False,
    )
    assert proc.returncode == 2 and "invalid choice" in proc.stderr
    assert os.path.isdir(framework / "benchmarks")
