"""A port of the fixture framework that continues into `rocport tune`: the tinyserve clone, a
checkpoint, a CPU-only profile (the bundled one without the native build: the CPU server runs the
numpy ops) and a job whose `tune:` section scales the glm52-mi355x workload down to that server."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

from agent.profiles import PROFILE_DIR
from evals.taskdefs import copy_framework
from tools import git as gitops

TUNE_SECTION = {
    "enabled": True,
    "preset": "glm52-mi355x",
    "workload_scale": 0.004,
    "num_prompts": 16,
    "repeats": 3,
    "max_concurrency": 16,
    "probe_prompts": 8,
    "price_per_gpu_hour": 2.0,
    "reference": ["B200:3192:6.5"],
}
"""ISL 80 / OSL 4 with a 60% prefix hit; 3 x 16 measured requests at 16 in flight per candidate."""


def fixture_job(workdir: Path, tune: dict | None = None) -> Path:
    """Write the framework clone, checkpoint, CPU profile and job under workdir; returns the job file."""
    src = copy_framework("tinyserve", workdir / "tinyserve")
    gitops.snapshot(src, "tinyserve")
    ckpt = workdir / "tiny-moe"
    subprocess.run(
        [sys.executable, "-m", "tinyserve.make_checkpoint", "--out", str(ckpt)],
        cwd=src,
        check=True,
        capture_output=True,
        timeout=300,
    )
    profile = yaml.safe_load((PROFILE_DIR / "tinyserve.yaml").read_text())
    profile["build"] = {"rocm": "echo 'no native build: the CPU server runs the numpy reference ops'"}
    (workdir / "tinyserve-cpu.yaml").write_text(yaml.safe_dump(profile, sort_keys=False))
    job = {
        "framework": {"profile": str(workdir / "tinyserve-cpu.yaml"), "repo": str(src)},
        "model": {"path": str(ckpt), "name": "tiny-moe"},
        "sandbox": {"backend": "local"},
        "strategy": "none",
        "bench": {"isl": 64, "osl": 8, "num_prompts": 8, "max_concurrency": 4},
        "tune": {**TUNE_SECTION, **(tune or {})},
    }
    path = workdir / "job.yaml"
    path.write_text(yaml.safe_dump(job, sort_keys=False))
    return path


def python3_path() -> str:
    """PATH with this interpreter's directory first: the profile launches `python3`, which needs numpy."""
    return f"{Path(sys.executable).parent}:{os.environ['PATH']}"


def relaunch(outcome, repo: Path, model: str = "tiny-moe"):
    """Start the chosen launch command as printed (on a free port) and measure it with the search's
    load: the same workload, seeds, concurrency and repeats. Returns the Measurement."""
    import re

    from agent.tune.measure import measure
    from sandboxes.local import LocalSandbox
    from tools.bench import Workload
    from tools.serve import free_port

    port = free_port()
    command = re.sub(r"--port \d+", f"--port {port}", outcome.chosen_command)
    workload = Workload(**{k: v for k, v in outcome.workload.items() if k in Workload.__dataclass_fields__})
    with LocalSandbox(repo, env={**os.environ, "PATH": python3_path()}) as box:
        server = box.start(command, name="chosen", port=port, health_path="/health", ready_timeout=120)
        try:
            return measure(
                f"http://127.0.0.1:{port}",
                model,
                workload,
                outcome.workload["max_concurrency"],
                outcome.workload["repeats"],
            )
        finally:
            server.stop()
