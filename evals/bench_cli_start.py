"""Time to the first byte of `rocport diagnose` and `rocport scan` on small inputs, from process spawn.

Both commands read files only, so they load only their own CLI module and never ask the Docker
daemon anything (the orphan-container cleanup of the other commands is skipped). The floors printed
alongside: a bare interpreter, and the imports every typer CLI pays (typer, which imports pydantic,
and rich). Median and best of --repeat runs; on a loaded machine the floors show how much is load.

    python3 evals/bench_cli_start.py [--repeat 15]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SMALL_LOG = "csrc/x.cu:3:10: fatal error: 'cuda_bf16.h' file not found\n"


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def first_byte_seconds(cmd: list[str]) -> tuple[float, float]:
    """Seconds from spawn to the first byte on stdout, and the CPU seconds the whole process used
    (CPU time is what a loaded machine distorts least)."""
    cpu = _children_cpu()
    start = time.perf_counter()
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env={**os.environ, "COLUMNS": "120"}
    )
    assert proc.stdout is not None  # noqa: S101 (narrowing: stdout=PIPE always sets it)
    proc.stdout.read(1)
    elapsed = time.perf_counter() - start
    proc.stdout.read()
    proc.wait()
    return elapsed, _children_cpu() - cpu


def _rocport() -> list[str]:
    exe = shutil.which("rocport", path=str(Path(sys.executable).parent))
    return [exe] if exe else [sys.executable, "-m", "agent.cli"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="rocport-cli-start-") as tmp:
        log = Path(tmp) / "build.log"
        log.write_text(SMALL_LOG)
        tree = Path(tmp) / "repo"
        (tree / "csrc").mkdir(parents=True)
        (tree / "csrc" / "x.cu").write_text("#include <cuda_bf16.h>\n__global__ void k() { __syncwarp(); }\n")
        cases = {
            "python -c print(1)  (floor)": [sys.executable, "-c", "print(1)"],
            "import typer, pydantic, rich (floor)": [
                sys.executable,
                "-c",
                "import typer, pydantic, rich.console; print(1)",
            ],
            "rocport diagnose small.log": [*_rocport(), "diagnose", str(log)],
            "rocport scan tiny-repo": [*_rocport(), "scan", str(tree)],
        }
        print(
            f"{args.repeat} runs each: first byte median / best (wall), and CPU of the whole process (median)"
        )
        for label, cmd in cases.items():
            runs = [first_byte_seconds(cmd) for _ in range(args.repeat)]
            walls, cpus = [r[0] for r in runs], [r[1] for r in runs]
            print(
                f"  {label:40} {statistics.median(walls) * 1000:7.0f} ms / {min(walls) * 1000:6.0f} ms"
                f"   cpu {statistics.median(cpus) * 1000:6.0f} ms"
            )
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"load average {load:.1f} on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
