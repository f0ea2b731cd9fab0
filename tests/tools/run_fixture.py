"""A finished port run on disk, made with real git commits, in the shape the port loop leaves it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

KERNEL = "#include <cuda_bf16.h>\n__global__ void k(__nv_bfloat16* x) { x[0] = x[0]; }\n"
FIXED = (
    "#ifdef USE_ROCM\n#include <hip/hip_bf16.h>\n#else\n#include <cuda_bf16.h>\n#endif\n"
    "__global__ void k(__nv_bfloat16* x) { x[0] = x[0]; }\n"
)
TYPED = FIXED.replace(
    "#endif\n", "#endif\n#ifdef USE_ROCM\ntypedef __hip_bfloat16 __nv_bfloat16;\n#endif\n", 1
)
BENCH = {
    "mean_ttft_ms": 80.5,
    "median_ttft_ms": 80.1,
    "p90_ttft_ms": 82.0,
    "p95_ttft_ms": 83.0,
    "p99_ttft_ms": 85.2,
    "mean_tpot_ms": 10.1,
    "median_tpot_ms": 10.0,
    "p90_tpot_ms": 10.5,
    "p95_tpot_ms": 10.8,
    "p99_tpot_ms": 11.0,
    "mean_itl_ms": 10.0,
    "median_itl_ms": 9.9,
    "p90_itl_ms": 10.4,
    "p95_itl_ms": 10.9,
    "p99_itl_ms": 12.0,
    "mean_e2e_latency_ms": 240.0,
    "median_e2e_latency_ms": 239.0,
    "p90_e2e_latency_ms": 250.0,
    "p95_e2e_latency_ms": 255.0,
    "p99_e2e_latency_ms": 260.0,
    "request_throughput": 3.9,
    "output_throughput": 62.4,
    "total_token_throughput": 312.0,
    "command": "rocport bench --base-url http://127.0.0.1:30000 --model tiny --isl 64 --osl 16",
}
ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
}


def git(repo: Path, *args: str) -> str:
    import os

    return subprocess.run(
        ["git", *args], cwd=repo, check=True, capture_output=True, text=True, env={**os.environ, **ENV}
    ).stdout.strip()


def _outcome(sig, proposer, files, commit, kept=True, reason=""):
    return {
        "proposal": {
            "failure_signature": sig,
            "proposer": proposer,
            "diff": "",
            "files": files,
            "rationale": "HIP ships the same types in hip_bf16.h.",
        },
        "applied": True,
        "kept": kept,
        "reason": reason,
        "commit": commit,
        "checks": [
            {
                "name": "hipcc gfx942 csrc/k.cu",
                "ok": True,
                "cmd": "hipcc -DUSE_ROCM --offload-arch=gfx942 -c csrc/k.cu",
                "detail": "",
                "duration_s": 1.0,
            },
            {
                "name": "nvcc sm_90 csrc/k.cu",
                "ok": True,
                "cmd": "nvcc -arch=sm_90 -c csrc/k.cu",
                "detail": "",
                "duration_s": 1.0,
            },
            {"name": "CUDA -E identical", "ok": True, "cmd": "nvcc -E", "detail": "", "duration_s": 0.2},
        ],
    }


def make_run(home: Path, run_id: str = "20261202-120000-tiny-ab12") -> Path:
    """A run dir with a clone whose work branch holds two kept fixes, and one reverted attempt."""
    run = home / "runs" / run_id
    repo = run / "repo"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    (repo / "csrc").mkdir()
    (repo / "csrc" / "k.cu").write_text(KERNEL)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "upstream")
    base = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "-b", f"rocport/port-{run_id}")
    (repo / "csrc" / "k.cu").write_text(FIXED)
    git(repo, "commit", "-qam", "rocport: cuda_header")
    first = git(repo, "rev-parse", "HEAD")
    (repo / "csrc" / "k.cu").write_text(TYPED)
    git(repo, "commit", "-qam", "rocport: bf16_type")
    second = git(repo, "rev-parse", "HEAD")
    header = {
        "kind": "cuda_header",
        "signature": "cuda_header:csrc/k.cu:cuda_bf16.h",
        "file": "csrc/k.cu",
        "line": 1,
        "message": "'cuda_bf16.h' file not found",
        "excerpt": (
            "csrc/k.cu:1:10: fatal error: 'cuda_bf16.h' file not found\n"
            "#include <cuda_bf16.h>\n         ^~~~~~~~~~~~~"
        ),
    }
    bf16 = {
        "kind": "bf16_type",
        "signature": "bf16_type:csrc/k.cu:__nv_bfloat16",
        "file": "csrc/k.cu",
        "line": 2,
        "message": "unknown type name '__nv_bfloat16'",
        "excerpt": "csrc/k.cu:2:22: error: unknown type name '__nv_bfloat16'",
    }
    state = {
        "run_id": run_id,
        "repo_dir": str(repo),
        "branch": f"rocport/port-{run_id}",
        "base_commit": base,
        "status": "green",
        "stop_reason": "green: ROCm build, load, serve and bench passed",
        "outcomes": [
            _outcome(header["signature"], "rule:headers", ["csrc/k.cu"], first),
            _outcome(
                bf16["signature"],
                "llm:scripted",
                ["csrc/k.cu"],
                None,
                kept=False,
                reason="nvcc no longer compiles csrc/k.cu",
            ),
            _outcome(bf16["signature"], "rule:types", ["csrc/k.cu"], second),
        ],
        "known_failures": {header["signature"]: header, bf16["signature"]: bf16},
        "unfixable": [],
        "failures": [],
        "fixed": [header["signature"], bf16["signature"]],
        "counters": {
            "builds": 2,
            "unit_compiles": 6,
            "launches": 1,
            "tokens_in": 900,
            "tokens_out": 80,
            "llm_calls": 2,
            "cost_usd": None,
        },
        "stages": {
            "build": {"status": "passed"},
            "load": {"status": "passed"},
            "serve": {"status": "passed"},
            "bench": {"status": "passed"},
            "gpu_kernels": {"status": "not run: no GPU", "detail": "would run the kernel unit tests"},
        },
        "bench": BENCH,
        "elapsed_s": 95.0,
    }
    (run / "state.json").write_text(json.dumps(state))
    (run / "job.yaml").write_text("framework: {profile: tinyserve}\n")
    events = [
        {"event": "phase", "phase": p, "ts": 1000.0 + 10 * i}
        for i, p in enumerate(
            [
                "checkout",
                "scan",
                "build",
                "diagnose",
                "propose",
                "apply_check",
                "build",
                "serve",
                "bench",
                "report",
            ]
        )
    ]
    (run / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    return run
