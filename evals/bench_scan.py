"""Time `rocport scan` against `grep -rE` of the same raw patterns over one generated tree.

The tree (evals/scan_corpus.py) has thousands of real-shaped .cu/.cuh/.cpp/.py files. grep is the
floor: it matches the raw patterns with no preprocessor, comment or Python awareness. The scan is
timed as a library call (`scan_report`, parallel workers) and through the real CLI (a fresh
`rocport scan` process, interpreter start-up included). Best of --repeat runs, warm page cache.

    python3 evals/bench_scan.py [--kernels 2000] [--python 1500] [--repeat 3] [--jobs N]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from evals.grep_patterns import ROUND_ONE, grep
from evals.scan_corpus import write_tree
from tools.scan import scan_report

T = TypeVar("T")


def _cpu() -> float:
    """CPU seconds (user + system) of this process and its waited-for children (grep, workers)."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def best_of(repeat: int, fn: Callable[[], T]) -> tuple[float, T, float]:
    """Best wall time of `repeat` (at least one) runs, the last result, and the CPU seconds of the best run.
    CPU time is printed too because on a shared machine wall time mostly measures the neighbours."""
    best, best_cpu = float("inf"), 0.0
    results: list[T] = []
    for _ in range(repeat):
        start, cpu = time.perf_counter(), _cpu()
        results = [fn()]  # the last only: earlier ones are freed as before
        wall = time.perf_counter() - start
        if wall < best:
            best, best_cpu = wall, _cpu() - cpu
    return best, results[-1], best_cpu


def alternated(
    repeat: int, first: Callable[[], object], second: Callable[[], object]
) -> tuple[list[float], list[float]]:
    """Wall times of `first` and `second`, run one after the other `repeat` times (which goes first
    alternates): a ratio from the same moments, where two best-ofs taken apart can straddle a change
    in the machine's speed. Medians show the typical run, not only the luckiest."""
    walls: tuple[list[float], list[float]] = ([], [])
    for i in range(max(1, repeat)):
        for which in (0, 1) if i % 2 == 0 else (1, 0):
            start = time.perf_counter()
            (first, second)[which]()
            walls[which].append(time.perf_counter() - start)
    return walls


def run_grep(root: Path, pattern: str = ROUND_ONE, *, c_locale: bool = False) -> int:
    """Matching lines of `grep -rEn` (evals/grep_patterns.py)."""
    return grep(root, pattern, c_locale=c_locale).count(b"\n")


def _cli() -> list[str]:
    """The `rocport` entry point: the one beside this interpreter (a venv not on PATH), else PATH's."""
    beside = Path(sys.executable).with_name("rocport")
    exe = str(beside) if beside.is_file() else shutil.which("rocport")
    return [exe] if exe else [sys.executable, "-c", "from agent.cli import main; main()"]


def run_cli_startup() -> int:
    """`rocport --version`: interpreter start plus importing every command module, no scanning."""
    return subprocess.run([*_cli(), "--version"], check=True, stdout=subprocess.DEVNULL).returncode


def bytecode_cached_env(prefix: Path) -> dict[str, str]:
    """This environment, with Python's bytecode cache kept under `prefix` (and written there even
    where PYTHONDONTWRITEBYTECODE is set): an installed rocport starts from compiled modules; without
    the cache every process compiles each of rocport's own modules again (~40 ms of CPU)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYTHONPYCACHEPREFIX": str(prefix)}


def run_cli(
    root: Path,
    out: Path,
    jobs: int | None,
    *extra: str,
    env: dict[str, str] | None = None,
    table: bool = False,
) -> int:
    """A fresh `rocport scan` process writing JSON to `out` (with `table`: the default report, to a
    pipe); `extra`: more options (--profile); `env`: the process's environment (default: this one)."""
    cmd = [*_cli(), "scan", str(root), *(() if table else ("--format", "json", "--output", str(out))), *extra]
    cmd += ["--jobs", str(jobs)] if jobs else []
    proc = subprocess.run(cmd, check=False, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    if proc.returncode not in (0, 1):  # 1: findings remain (like ruff)
        raise subprocess.CalledProcessError(proc.returncode, cmd)
    return len(proc.stdout) if table else out.stat().st_size


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", type=int, default=2000)
    ap.add_argument("--headers", type=int, default=500)
    ap.add_argument("--bindings", type=int, default=300)
    ap.add_argument("--python", type=int, default=1500)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--keep", action="store_true", help="keep the generated tree and print its path")
    args = ap.parse_args(argv)
    if not shutil.which("grep"):
        sys.exit("bench_scan: grep not found on PATH")
    tmp = Path(tempfile.mkdtemp(prefix="rocport-bench-scan-"))
    try:
        root = tmp / "tree"
        size = write_tree(
            root, kernels=args.kernels, headers=args.headers, bindings=args.bindings, python=args.python
        )
        files = args.kernels + args.headers + args.bindings + args.python + 1
        run_grep(root)  # warm the page cache for both sides
        grep_s, grep_lines, grep_cpu = best_of(args.repeat, lambda: run_grep(root))
        lib_s, report, lib_cpu = best_of(args.repeat, lambda: scan_report(root, jobs=args.jobs))
        cli_s, _, cli_cpu = best_of(args.repeat, lambda: run_cli(root, tmp / "scan.json", args.jobs))
        startup_s, _, startup_cpu = best_of(args.repeat, run_cli_startup)
        load = os.getloadavg()[0]
        print(
            f"tree: {files} files, {size / 1e6:.1f} MB, cpus={os.cpu_count()}, jobs={args.jobs or 'auto'}, "
            f"load average {load:.1f}"
        )
        print(
            f"grep -rE (raw patterns)   wall {grep_s:7.3f} s  cpu {grep_cpu:6.2f} s  {grep_lines} matching lines"
        )
        print(
            f"scan_report (library)     wall {lib_s:7.3f} s  cpu {lib_cpu:6.2f} s  {len(report.findings)} findings"
            f"  ratio {lib_s / grep_s:.2f}x grep (wall), {lib_cpu / grep_cpu:.2f}x (cpu)"
        )
        print(
            f"rocport scan (CLI, json)  wall {cli_s:7.3f} s  cpu {cli_cpu:6.2f} s  ratio {cli_s / grep_s:.2f}x grep"
        )
        print(
            f"  of which CLI start-up   wall {startup_s:7.3f} s  cpu {startup_cpu:6.2f} s  (rocport --version: "
            f"every command module's imports); without it {(cli_s - startup_s) / grep_s:.2f}x grep"
        )
        if args.keep:
            print(f"tree kept at {root}")
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
