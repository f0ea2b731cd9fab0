"""CUDA libraries whose ROCm counterpart mirrors the API under another prefix (NVRTC -> hipRTC, cuBLAS ->
hipBLAS, ...): the header maps with one alias per name in use; a ROCm library missing from the image is
declined as environment, naming the package."""

from __future__ import annotations

import subprocess

from agent.proposers.rules import Workspace, propose_for
from tests.agent.rules.helpers import declines, failure, image_toolchains, propose, validate

JIT = """\
#include <nvrtc.h>

#include <string>

#define RTC_OK(call) ((call) == NVRTC_SUCCESS)

std::string compile(const char* src) {
  nvrtcProgram prog;
  if (!RTC_OK(nvrtcCreateProgram(&prog, src, "k.cu", 0, nullptr, nullptr))) return "create failed";
  nvrtcResult res = nvrtcCompileProgram(prog, 0, nullptr);
  std::string out = nvrtcGetErrorString(res);
  nvrtcDestroyProgram(&prog);
  return out;
}
"""
GEMM = """\
#include <cublas_v2.h>

#include "cublasLt.h"

int gemm(cublasHandle_t h, const float* a, const float* b, float* c, int n) {
  const float one = 1.f, zero = 0.f;
  return cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_T, n, n, n, &one, a, n, b, n, &zero, c, n) == CUBLAS_STATUS_SUCCESS;
}
"""


def test_nvrtc_maps_to_hiprtc_with_an_alias_per_name_and_compiles_in_the_image(git_repo, rocm_image):
    root = git_repo({"jit.cpp": JIT})
    fail = failure("cuda_header", "jit.cpp", "nvrtc.h", "fatal error: 'nvrtc.h' file not found")
    prop = propose(root, fail)
    assert "+#include <hip/hiprtc.h>\n" in prop.diff
    for name, hip in (
        ("NVRTC_SUCCESS", "HIPRTC_SUCCESS"),
        ("nvrtcProgram", "hiprtcProgram"),
        ("nvrtcCreateProgram", "hiprtcCreateProgram"),
        ("nvrtcResult", "hiprtcResult"),
        ("nvrtcGetErrorString", "hiprtcGetErrorString"),
    ):
        assert f"+#define {name} {hip}\n" in prop.diff
    outcome = validate(root, image_toolchains(root, rocm_image, "gfx942"), prop, fail)
    assert outcome.kept, outcome.reason
    assert any(c.ok and "hipcc gfx942" in c.name for c in outcome.checks), [c.name for c in outcome.checks]
    assert not propose_for(fail, Workspace(root=root)).proposals  # a second run adds nothing


def test_cublas_maps_by_prefix_and_a_missing_hipblas_names_its_package(git_repo):
    root = git_repo({"gemm.cu": GEMM, "cublasLt.h": "#pragma once\n"})  # a repo file, not the library
    prop = propose(root, failure("cuda_header", "gemm.cu", "cublas_v2.h"))
    for line in ("#include <hipblas/hipblas.h>", "#define cublasSgemm hipblasSgemm"):
        assert f"+{line}\n" in prop.diff
    assert "+#define cublasHandle_t hipblasHandle_t\n" in prop.diff
    assert "+#define CUBLAS_OP_N HIPBLAS_OP_N\n" in prop.diff
    assert '#include "cublasLt.h"' not in prop.diff.split("+#else", 1)[0]  # the repo's own header stays
    (why,) = declines(root, failure("cuda_header", "gemm.cu", "hipblas/hipblas.h"))
    assert "install the ROCm package hipblas" in why


COMPLEX = """\
#include <cuComplex.h>
#include <cuda_profiler_api.h>

__global__ void rotate(cuFloatComplex* z, cuDoubleComplex* wide, float turn) {
  const cuFloatComplex w = make_cuFloatComplex(cosf(turn), sinf(turn));
  z[threadIdx.x] = cuCmulf(z[threadIdx.x], cuConjf(w));
  wide[threadIdx.x] = cuComplexFloatToDouble(z[threadIdx.x]);
}

void profile(cuFloatComplex* z, cuDoubleComplex* wide) {
  cudaProfilerStart();
  rotate<<<1, 64>>>(z, wide, 0.25f);
  cudaProfilerStop();
}
"""


def test_cucomplex_maps_name_by_name_and_compiles_with_the_profiler_header(git_repo, rocm_image, nvcc):
    root = git_repo({"rot.cu": COMPLEX})
    fail = failure("cuda_header", "rot.cu", "cuComplex.h", "fatal error: 'cuComplex.h' file not found")
    prop = propose(root, fail)
    for cuda, hip in (
        ("cuCmulf", "hipCmulf"),
        ("cuComplexFloatToDouble", "hipComplexFloatToDouble"),  # the longer prefix wins over cuC
        ("make_cuFloatComplex", "make_hipFloatComplex"),
        ("cuFloatComplex", "hipFloatComplex"),
    ):
        assert f"+#define {cuda} {hip}\n" in prop.diff
    assert "+#include <hip/hip_runtime_api.h>\n" in prop.diff  # the profiler header, in the same block
    subprocess.run(["git", "apply", "-"], input=prop.diff, text=True, cwd=root, check=True)
    subprocess.run(["git", "commit", "-qam", "headers"], cwd=root, check=True)
    runtime = failure(
        "cuda_api", "rot.cu", "cudaProfilerStart", "use of undeclared identifier 'cudaProfilerStart'"
    )
    prop2 = propose(root, runtime)
    assert "+#define cudaProfilerStop hipProfilerStop\n" in prop2.diff
    outcome = validate(root, image_toolchains(root, rocm_image, "gfx942"), prop2, runtime)
    assert outcome.kept, outcome.reason
    assert all(c.ok for c in outcome.checks), [c.detail for c in outcome.checks]


def test_nvtx_ranges_map_to_roctx_including_the_names_that_are_not_a_prefix_swap(git_repo):
    src = (
        '#include <nvtx3/nvToolsExt.h>\n\nvoid step() {\n  nvtxRangeId_t r = nvtxRangeStartA("load");\n'
        '  nvtxRangeEnd(r);\n  nvtxRangePushA("compute");\n  nvtxRangePop();\n}\n'
    )
    root = git_repo({"step.cpp": src})
    prop = propose(root, failure("cuda_header", "step.cpp", "nvtx3/nvToolsExt.h"))
    for line in (
        "#include <roctracer/roctx.h>",
        "#define nvtxRangeEnd roctxRangeStop",
        "#define nvtxRangeId_t roctx_range_id_t",
        "#define nvtxRangePushA roctxRangePushA",
    ):
        assert f"+{line}\n" in prop.diff
