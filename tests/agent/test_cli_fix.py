"""`rocport fix` through its real entry point: several families fixed in one run, one commit per fix."""

from __future__ import annotations

import re
import subprocess

import pytest
from typer.testing import CliRunner

from agent.cli import app

HEADERS = """#include <cuda_runtime.h>
#include <cuda_fp16.h>

__global__ void half_scale(__half* x) { x[threadIdx.x] = __float2half(__half2float(x[threadIdx.x]) * 2.f); }
"""
WARP = """#ifdef USE_ROCM
#include <hip/hip_runtime.h>
#else
#include <cuda_runtime.h>
#endif

__global__ void warp_max(float* x) {
  float v = x[threadIdx.x];
  for (int offset = 16; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffff, v, offset));
  if (threadIdx.x % 32 == 0) x[threadIdx.x / 32] = v;
}
"""
TRAITS = """#include <cuda/std/type_traits>

template <typename T> __global__ void zero(T* x) { if (cuda::std::is_integral<T>::value) x[threadIdx.x] = 0; }
template __global__ void zero<int>(int*);
"""


def _git(root, *args) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout


def _fix(*args):
    return CliRunner().invoke(app, ["fix", *map(str, args)])


@pytest.mark.slow
def test_fix_from_scan_commits_one_fix_per_family(git_repo, hipcc, nvcc):
    root = git_repo({"csrc/half.cu": HEADERS, "csrc/ops/warp.cu": WARP, "csrc/zero.cu": TRAITS})
    result = _fix(root, "--from-scan", "--image", "local")
    assert result.exit_code == 0, result.output
    assert _git(root, "branch", "--show-current").startswith("rocport/fix-")
    subjects = _git(root, "log", "--format=%s", "main..HEAD").splitlines()
    # wave 2: once <cuda/std/type_traits> is guarded, zero.cu's next error (threadIdx, which nvcc declares
    # implicitly) shows and is fixed too, so every unit really compiles for ROCm at the end
    assert sorted(subjects) == [
        "Guard CUDA headers for ROCm in csrc/half.cu",
        "Include the HIP runtime on ROCm in csrc/zero.cu",
        "Route warp intrinsics through the compat header in csrc/ops/warp.cu",
        "Use std traits on ROCm in csrc/zero.cu",
    ]
    assert "3/3 unit(s) compile for ROCm" in result.output
    # the recompiles after each wave go through a warm compile service: a unit no patch changed since its
    # last compile (its validation, or the previous wave's round) is answered from the cache, not rebuilt
    compiled, cached = map(
        int, re.search(r"(\d+) compiled, (\d+) answered from the compile cache", result.output).groups()
    )
    assert compiled == 4 and cached >= 5, (
        result.output
    )  # one hipcc per kept patch; the rounds' unit checks cached
    body = _git(root, "log", "-1", "--format=%b", "--grep=Guard CUDA headers")
    assert "hipcc -x hip -DUSE_ROCM --offload-arch=gfx90a" in body
    # a header guard is proven for CUDA from the text (the CUDA include only moves into `#else`): the
    # evidence says so, and says nvcc was not rerun, rather than claim a compile that did not happen
    assert "[ok] cuda identity csrc/half.cu: CUDA lines unchanged" in body
    assert "[ok] nvcc csrc/half.cu: not recompiled: its CUDA input is unchanged" in body
    assert _git(root, "status", "--porcelain") == ""
    again = _fix(root, "--from-scan", "--image", "local", "--dry-run")  # idempotent: nothing left to propose
    assert again.exit_code == 0 and "diff --git" not in again.output


def test_fix_from_log_in_rocm_image(git_repo, rocm_image, nvcc):
    root = git_repo({"csrc/half.cu": HEADERS})
    log = root.parent / "build.log"
    log.write_text(
        "csrc/half.cu:1:10: fatal error: 'cuda_runtime.h' file not found\n"
        "#include <cuda_runtime.h>\n         ^~~~~~~~~~~~~~~~\n"
        "1 error generated when compiling for gfx942.\n"
    )
    result = _fix(root, "--log", log, "--arch", "gfx942")
    assert result.exit_code == 0, result.output
    body = _git(root, "log", "-1", "--format=%B")
    assert body.startswith("Guard CUDA headers for ROCm in csrc/half.cu") and "--offload-arch=gfx942" in body


def test_dry_run_prints_without_touching_the_repo(git_repo):
    root = git_repo({"csrc/half.cu": HEADERS})
    result = _fix(root, "--from-scan", "--dry-run")
    assert result.exit_code == 0, result.output
    assert "+#include <hip/hip_runtime.h>" in result.output
    assert (
        _git(root, "status", "--porcelain") == "" and _git(root, "branch", "--show-current").strip() == "main"
    )


def test_bad_input_is_one_line(git_repo, tmp_path):
    root = git_repo({"a.cu": "int x;\n"})
    both = _fix(root)
    assert both.exit_code == 2 and "exactly one of --log" in both.output
    (root / "a.cu").write_text("dirty\n")
    dirty = _fix(root, "--from-scan", "--image", "local")
    assert dirty.exit_code == 2 and "uncommitted changes" in dirty.output and "Traceback" not in dirty.output
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "k.cu").write_text(HEADERS)
    nogit = _fix(plain, "--from-scan", "--image", "local")
    assert nogit.exit_code == 2 and "not a git repository" in nogit.output


def _commit_all(root, message: str) -> None:
    _git(root, "add", "-A")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", message)


def test_source_that_is_not_utf8_is_fixed_byte_for_byte(git_repo, hipcc, nvcc):
    root = git_repo({"csrc/half.cu": HEADERS})
    latin1 = b"// caf\xe9 \xff (Latin-1 bytes, not UTF-8)\n"
    (root / "csrc/half.cu").write_bytes(latin1 + HEADERS.encode())
    _commit_all(root, "latin-1 comment")
    result = _fix(root, "--from-scan", "--image", "local")
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output and "1 fix(es) committed" in result.output
    fixed = (root / "csrc/half.cu").read_bytes()
    assert fixed.startswith(latin1) and b"USE_ROCM" in fixed  # the bytes it did not fix are untouched


def test_a_failing_session_puts_the_user_back_on_their_branch(git_repo, tmp_path):
    root = git_repo({"csrc/half.cu": HEADERS})
    _git(root, "checkout", "-qb", "my-feature")
    result = _fix(root, "--from-scan", "--image", "rocport/no-such-image:0")
    assert result.exit_code == 2 and result.output.startswith("rocport: error: ")
    assert _git(root, "branch", "--show-current").strip() == "my-feature"
    assert "rocport/fix-" not in _git(root, "branch", "--list")  # nothing committed: no branch left behind
    assert _git(root, "status", "--porcelain") == ""


def test_a_fifo_named_like_a_kernel_hangs_neither_scan_nor_fix(git_repo, hipcc, nvcc):
    import os
    import sys

    root = git_repo({"csrc/half.cu": HEADERS})
    os.mkfifo(root / "csrc" / "x.cu")  # no writer ever comes: a plain open() would block forever
    cli = [sys.executable, "-c", "from agent.cli import main; main()"]
    scan = subprocess.run(
        [*cli, "scan", str(root), "-f", "json"], capture_output=True, text=True, timeout=120, check=False
    )
    assert scan.returncode in (0, 1), scan.stderr
    assert "half.cu" in scan.stdout and "Traceback" not in scan.stderr
    fixed = subprocess.run(
        [*cli, "fix", str(root), "--from-scan", "--image", "local"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "1 fix(es) committed" in fixed.stdout


@pytest.mark.slow
def test_a_crlf_source_is_fixed_and_keeps_its_crlf_line_ends(git_repo, hipcc, nvcc):
    """Sources written on Windows end lines in CRLF; the rules' diffs are LF. The guard and the runtime-name
    mapping still apply (they were refused as "patch does not apply"), and no line of the file turns LF."""
    source = (
        "#include <cuda_runtime.h>\n#include <stdint.h>\n\n__constant__ float mat[9];\n\n"
        "void set_mat(const float* m) { cudaMemcpyToSymbol(mat, m, sizeof(mat)); }\n"
        "__global__ void scale(float* x) { x[threadIdx.x] *= mat[0]; }\n"
    )
    root = git_repo({"README": "x\n"})
    (root / "Utils").mkdir()
    (root / "Utils/ColorSpace.cu").write_bytes(source.replace("\n", "\r\n").encode())
    _commit_all(root, "a CRLF source")
    result = _fix(root, "--from-scan", "--image", "local")
    assert result.exit_code == 0, result.output
    assert "patch does not apply" not in result.output and "1/1 unit(s) compile for ROCm" in result.output
    fixed = (root / "Utils/ColorSpace.cu").read_bytes()
    assert b"USE_ROCM" in fixed and fixed.count(b"\n") == fixed.count(b"\r\n")
    assert _git(root, "status", "--porcelain") == ""


@pytest.mark.slow
def test_a_kernel_instantiated_by_a_unit_with_its_own_defines_is_fixed_through_that_unit(
    git_repo, hipcc, nvcc
):
    """The build compiles acoustic.cu-like kernels only through a unit that #defines their macros first
    (deepwave's CMake passes them as -D; an instantiating unit is the same): alone they stop at `#error`, so
    rocport must check the header fix through the unit, not withdraw it because the kernel alone fails."""
    common = "#pragma once\n#include <cuda_runtime.h>\n\ninline void sync() { cudaDeviceSynchronize(); }\n"
    kernel = (
        '#ifndef DW_NDIM\n#error DW_NDIM must be specified\n#endif\n#include "common_gpu.h"\n\n'
        "__global__ void scale(float* x) { x[threadIdx.x] *= DW_NDIM; }\n"
    )
    root = git_repo(
        {
            "common_gpu.h": common,
            "kernel.cu": kernel,
            "unit_1d.cu": '#define DW_NDIM 1\n#include "kernel.cu"\n',
        }
    )
    built = subprocess.run(
        [
            "hipcc",
            "-x",
            "hip",
            "-DUSE_ROCM",
            "--offload-arch=gfx90a",
            "-I.",
            "-c",
            "unit_1d.cu",
            "-o",
            "/dev/null",
        ],
        cwd=root,
        capture_output=True,
        text=True,
    )
    assert built.returncode != 0 and "cuda_runtime.h" in built.stderr
    log = root.parent / "build.log"
    log.write_text(built.stderr)
    result = _fix(root, "--log", log, "--image", "local")
    assert result.exit_code == 0, result.output
    assert "1/1 unit(s) compile for ROCm" in result.output and "withdrawn" not in result.output
    assert _git(root, "log", "--format=%s", "main..HEAD").splitlines()  # kept commits
