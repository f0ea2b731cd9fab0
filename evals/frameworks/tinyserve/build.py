#!/usr/bin/env python3
"""Build tinyserve's kernels into build/libtinyserve_kernels.so with hipcc (ROCm) or nvcc (CUDA).

    python3 build.py --backend rocm --arch gfx942
    python3 build.py --backend cuda --arch sm_90

Every translation unit is compiled even when another fails (keep-going), so one build shows every
failing unit. Compiler output is printed verbatim, ninja-style: `FAILED: <object>` then the command
then its output. Exit status is non-zero when any unit or the link failed. Standard library only:
this runs in the bare ROCm build container.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent
LIBRARY = "libtinyserve_kernels.so"
COMMON_FLAGS = ["-O2", "-std=c++17", "-Icsrc"]


def unit_command(backend: str, arch: str, source: str, obj: str) -> list[str]:
    """The compiler command for one translation unit (paths relative to the repo root)."""
    if backend == "rocm":
        hipcc = os.environ.get("HIPCC", "hipcc")
        return [hipcc, "-x", "hip", "-DUSE_ROCM", "-fPIC", f"--offload-arch={arch}", *COMMON_FLAGS,
                "-c", source, "-o", obj]
    nvcc = os.environ.get("NVCC", "nvcc")
    return [nvcc, f"-arch={arch}", "-Xcompiler", "-fPIC", *COMMON_FLAGS, "-c", source, "-o", obj]


def link_command(backend: str, arch: str, objects: list[str], out: str) -> list[str]:
    if backend == "rocm":
        return [os.environ.get("HIPCC", "hipcc"), "-shared", "-fPIC", f"--offload-arch={arch}", *objects,
                "-o", out]
    return [os.environ.get("NVCC", "nvcc"), "-shared", f"-arch={arch}", *objects, "-o", out]


def compile_unit(cmd: list[str]) -> tuple[int, str]:
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    return proc.returncode, proc.stdout + proc.stderr


def report(step: str, total: int, cmd: list[str], returncode: int, output: str, target: str) -> None:
    print(f"[{step}/{total}] {shlex.join(cmd)}", flush=True)
    if returncode != 0:
        print(f"FAILED: {target}")
        print(shlex.join(cmd))
    if output:
        print(output, end="" if output.endswith("\n") else "\n")
    sys.stdout.flush()


def build(backend: str, arch: str, units: list[str], jobs: int) -> int:
    """Compile every unit (keep-going), then link when all compiled. Returns the exit status."""
    build_dir = ROOT / "build"
    build_dir.mkdir(exist_ok=True)
    objects = [f"build/{Path(u).stem}.o" for u in units]
    commands = [unit_command(backend, arch, u, o) for u, o in zip(units, objects)]
    total = len(units) + 1
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        results = list(pool.map(compile_unit, commands))
    failed = []
    for step, (cmd, obj, (rc, out)) in enumerate(zip(commands, objects, results), start=1):
        report(str(step), total, cmd, rc, out, obj)
        if rc != 0:
            failed.append(units[step - 1])
    if failed:
        print(f"tinyserve build: {len(failed)} of {len(units)} units failed: {' '.join(failed)}")
        print("ninja: build stopped: subcommand failed.")
        return 1
    lib = f"build/{LIBRARY}"
    cmd = link_command(backend, arch, objects, lib)
    rc, out = compile_unit(cmd)
    report(str(total), total, cmd, rc, out, lib)
    if rc != 0:
        print("ninja: build stopped: subcommand failed.")
        return 1
    info = {"backend": backend, "arch": arch, "units": units, "library": lib,
            "seconds": round(time.monotonic() - started, 2)}
    (build_dir / "build_info.json").write_text(json.dumps(info, indent=1))
    print(f"tinyserve build: ok, {len(units)} units, {lib} ({backend} {arch})")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("rocm", "cuda"), default="rocm")
    parser.add_argument("--arch", default=None, help="gfx target for rocm (gfx942), sm_XX for cuda (sm_90)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--units", nargs="*", default=None, help="only these sources (default csrc/*.cu)")
    args = parser.parse_args(argv)
    arch = args.arch or ("gfx942" if args.backend == "rocm" else "sm_90")
    if args.backend == "rocm":
        os.environ.setdefault("HIP_PLATFORM", "amd")
    units = args.units or sorted(str(p.relative_to(ROOT)) for p in (ROOT / "csrc").glob("*.cu"))
    if not units:
        parser.error("no translation units found under csrc/")
    return build(args.backend, arch, units, max(1, args.jobs))


if __name__ == "__main__":
    sys.exit(main())
