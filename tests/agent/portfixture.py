"""A tiny CUDA-first repo with real ROCm faults, its profile and job, for the port-loop tests.

Faults: `warp_reduce.cu` includes <cuda_runtime.h> (a fatal error that masks the next one) and uses
`__shfl_xor_sync` (undeclared on HIP); `scale.cu` includes <cuda_bf16.h>. The build compiles every
unit with hipcc, keep-going, after a short sleep so a test can kill the port mid-build.
"""

from __future__ import annotations

import json
from pathlib import Path

WARP_REDUCE = """\
#include <cuda_runtime.h>

__global__ void warp_sum(const float* in, float* out) {
  float v = in[threadIdx.x];
  for (int offset = 16; offset > 0; offset >>= 1)
    v += __shfl_xor_sync(0xffffffff, v, offset);
  if (threadIdx.x == 0) *out = v;
}
"""

SCALE = """\
#include <cuda_runtime.h>
#include <cuda_fp16.h>

__global__ void scale(__half* x, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = __float2half(__half2float(x[i]) * s);
}
"""

BUILD_SH = """\
#!/bin/bash
# Keep-going build: every unit is compiled even when one fails.
arch=${1:-gfx90a}
sleep ${BUILD_SLEEP:-0}
mkdir -p build
status=0
for f in csrc/*.cu kernels/*.cu; do
  [ -e "$f" ] || continue
  echo "[build] $f"
  hipcc -x hip --offload-arch=$arch -DUSE_ROCM -Icsrc -c $f -o build/$(basename $f .cu).o || status=1
done
exit $status
"""

PROFILE = """\
name: tinykernels
description: two CUDA-first kernels, compiled with hipcc unit by unit
build:
  rocm: bash build.sh {arch}
  timeout_s: 600
unit:
  hip: hipcc -x hip --offload-arch={arch} -DUSE_ROCM -Icsrc -c {file} -o {out}
  cuda: nvcc -arch=sm_90 -Icsrc -c {file} -o {out}
  cuda_preprocess: nvcc -E -Icsrc {file}
  sources: ["csrc/*.cu"]
launch:
  command: "true"
"""

FILES = {
    "csrc/warp_reduce.cu": WARP_REDUCE,
    "csrc/scale.cu": SCALE,
    "build.sh": BUILD_SH,
    ".gitignore": "build/\n",
}
HEADER_FAULTS = {k: v for k, v in FILES.items() if k != "csrc/warp_reduce.cu"}
"""Only the header fault: one wave, one build (for the kill -9 and resume tests)."""
UNLISTED_FAULT = {**HEADER_FAULTS, "kernels/extra.cu": SCALE.replace("scale(", "extra_scale(")}
"""A faulty unit the build compiles but the profile's unit sources (csrc/*.cu) do not name: the first wave
cannot compile it alone, so only the full build shows it and a second build is needed."""


def header_failure(unit: str) -> dict:
    """The failure hipcc reports for `unit`'s `#include <cuda_runtime.h>`, as a diagnosis dict."""
    return {
        "kind": "cuda_header",
        "message": "'cuda_runtime.h' file not found",
        "file": unit,
        "line": 1,
        "symbol": "cuda_runtime.h",
        "signature": f"cuda_header:{unit}:cuda_runtime.h",
        "facts": {"unit": unit},
    }


def make_job(
    tmp_path: Path, repo: Path, *extra: str, build_sleep: int = 0, build_env: dict[str, str] | None = None
) -> list[str]:
    """The job sources for `load_job`: a YAML file plus overrides.

    build_sleep: seconds build.sh sleeps before compiling, so a test can kill a run mid-build.
    build_env: more variables for the build. Both go through the profile's `env`, the only way a value
    reaches a sandboxed build: the sandbox passes an allow-list of the caller's environment.
    """
    env = {**({"BUILD_SLEEP": str(build_sleep)} if build_sleep else {}), **(build_env or {})}
    env_block = "env:\n" + "".join(f"  {k}: {json.dumps(v)}\n" for k, v in env.items()) if env else ""
    profile = tmp_path / "tinykernels.yaml"
    profile.write_text(PROFILE + env_block)
    job = tmp_path / "job.yaml"
    job.write_text(
        f"framework:\n  profile: {profile}\n  repo: {repo}\ntarget:\n  arch: gfx90a\n"
        f"sandbox:\n  backend: local\n"
    )
    return [str(job), *extra]
