"""Real compilers produce the logs: host hipcc under `make -k`, nvcc, and clang-21 hipcc in the ROCm image.

Line numbers are looked up in the sources the test writes, never typed in by hand.
"""

from __future__ import annotations

import os
import subprocess

from tools.diagnose import diagnose_file

COMMON_CUH = """\
#pragma once
#include <cuda_bf16.h>
__device__ inline float warp_max(float v) {
  for (int m = 16; m > 0; m >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffff, v, m));
  return v;
}
"""
NORM_CU = """\
#include "common.cuh"
__global__ void norm(float* x) { x[threadIdx.x] = warp_max(x[threadIdx.x]); }
"""
QUANT_CU = """\
#include <hip/hip_runtime.h>
__global__ void quant(float* x) {
  __nv_bfloat16 y;
  x[0] = __shfl_xor_sync(0xffffffff, x[0], 1);
}
template <typename T> struct Acc { T::type value; };
"""
MAKEFILE = """\
OBJS = build/norm.o build/quant.o
all: $(OBJS)
build/%.o: csrc/%.cu
\tmkdir -p build
\t$(HIPCC) --offload-arch=gfx90a -O2 -c $< -o $@
"""


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def _col_of(text: str, needle: str) -> int:
    return text.splitlines()[_line_of(text, needle) - 1].index(needle) + 1


def _by_kind(failures, kind):
    return [f for f in failures if f.kind == kind]


def test_host_hipcc_under_make_k_every_unit(hipcc, git_repo, tmp_path):
    repo = git_repo(
        {
            "csrc/common.cuh": COMMON_CUH,
            "csrc/norm.cu": NORM_CU,
            "csrc/quant.cu": QUANT_CU,
            "Makefile": MAKEFILE,
        }
    )
    run = subprocess.run(
        ["make", "-k", f"HIPCC={hipcc}"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "HIP_PLATFORM": "amd"},
        timeout=300,
    )
    assert run.returncode != 0
    log = tmp_path / "build.log"
    log.write_text(run.stdout + run.stderr)

    failures = diagnose_file(log, repo_root=repo, source="hipcc")

    header = _by_kind(failures, "cuda_header")
    assert len(header) == 1
    assert (header[0].file, header[0].line, header[0].symbol) == (
        "csrc/common.cuh",
        _line_of(COMMON_CUH, "cuda_bf16.h"),
        "cuda_bf16.h",
    )
    assert header[0].facts["unit"] == "csrc/norm.cu"
    assert "In file included from csrc/norm.cu" in header[0].excerpt
    bf16 = _by_kind(failures, "bf16_type")
    assert [(f.file, f.line, f.column, f.symbol) for f in bf16] == [
        (
            "csrc/quant.cu",
            _line_of(QUANT_CU, "__nv_bfloat16"),
            _col_of(QUANT_CU, "__nv_bfloat16"),
            "__nv_bfloat16",
        )
    ]
    shfl = _by_kind(failures, "warp_intrinsic")
    assert [(f.file, f.line, f.symbol, f.facts["unit"]) for f in shfl] == [
        ("csrc/quant.cu", _line_of(QUANT_CU, "__shfl_xor_sync"), "__shfl_xor_sync", "csrc/quant.cu")
    ]
    dialect = _by_kind(failures, "compiler_dialect")
    assert [(f.file, f.line, f.symbol) for f in dialect] == [
        ("csrc/quant.cu", _line_of(QUANT_CU, "T::type"), "T::type")
    ]
    assert {f.source for f in failures} == {"hipcc"}
    assert all(f.kind != "unknown" for f in failures), failures


NVCC_COMMON = """\
#pragma once
__device__ inline float to_float(float v) {
  __hip_bfloat16 h;
  return v;
}
"""
NVCC_UNIT = """\
#include "compat.cuh"
__global__ void k(float* x) { x[0] = to_float(x[0]); }
"""


def test_nvcc_header_error_names_the_unit_from_its_trailer(nvcc, git_repo, tmp_path):
    repo = git_repo({"csrc/compat.cuh": NVCC_COMMON, "csrc/kernel.cu": NVCC_UNIT})
    run = subprocess.run(
        [nvcc, "-arch=sm_90", "-c", "csrc/kernel.cu", "-o", str(tmp_path / "k.o")],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert run.returncode != 0
    log = tmp_path / "nvcc.log"
    log.write_text(run.stdout + run.stderr)

    failures = diagnose_file(log, repo_root=repo)

    assert [(f.kind, f.file, f.line, f.symbol, f.source) for f in failures] == [
        ("bf16_type", "csrc/compat.cuh", _line_of(NVCC_COMMON, "__hip_bfloat16"), "__hip_bfloat16", "nvcc")
    ]
    assert failures[0].facts["unit"] == "csrc/kernel.cu"


def test_nvcc_missing_header_through_host_preprocessor(nvcc, git_repo, tmp_path):
    repo = git_repo(
        {
            "csrc/kernel.cu": '#include "compat.cuh"\n',
            "csrc/compat.cuh": "#include <cuda/std/nonexistent_trait>\n",
        }
    )
    run = subprocess.run(
        [nvcc, "-arch=sm_90", "-c", "csrc/kernel.cu", "-o", str(tmp_path / "k.o")],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    log = tmp_path / "nvcc.log"
    log.write_text(f"{nvcc} -arch=sm_90 -c csrc/kernel.cu -o k.o\n" + run.stdout + run.stderr)

    failures = diagnose_file(log, repo_root=repo)

    assert [(f.kind, f.file, f.line, f.symbol, f.source, f.facts.get("unit")) for f in failures] == [
        ("cuda_std", "csrc/compat.cuh", 1, "cuda/std/nonexistent_trait", "nvcc", "csrc/kernel.cu")
    ]


def test_clang21_hipcc_in_rocm_image(rocm_image, git_repo, tmp_path):
    repo = git_repo({"csrc/common.cuh": COMMON_CUH, "csrc/norm.cu": NORM_CU, "csrc/quant.cu": QUANT_CU})
    script = "for u in norm quant; do hipcc --offload-arch=gfx942 -O2 -c csrc/$u.cu -o /tmp/$u.o; done"
    run = subprocess.run(
        [
            "docker",
            "run",
            "--rm",
            "--network",
            "none",
            "-v",
            f"{repo}:{repo}",
            "-w",
            str(repo),
            rocm_image,
            "bash",
            "-c",
            script,
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    log = tmp_path / "rocm64.log"
    log.write_text(run.stdout + run.stderr)
    assert "when compiling for gfx942" in log.read_text()

    failures = diagnose_file(log, repo_root=repo)

    got = {(f.kind, f.file, f.line, f.symbol) for f in failures}
    assert ("cuda_header", "csrc/common.cuh", _line_of(COMMON_CUH, "cuda_bf16.h"), "cuda_bf16.h") in got
    assert ("bf16_type", "csrc/quant.cu", _line_of(QUANT_CU, "__nv_bfloat16"), "__nv_bfloat16") in got
    assert (
        "warp_intrinsic",
        "csrc/quant.cu",
        _line_of(QUANT_CU, "__shfl_xor_sync"),
        "__shfl_xor_sync",
    ) in got
    # clang 21 demotes the missing `typename` to a C++20-extension warning: not a failure
    assert not _by_kind(failures, "compiler_dialect")
    assert all(f.facts.get("target") == "gfx942" and f.source == "hipcc" for f in failures)
    assert {f.facts["unit"] for f in failures} == {"csrc/norm.cu", "csrc/quant.cu"}
