"""Runtime API and cooperative-groups rules for repos built without hipify, proven with hipcc gfx942 and nvcc."""

from __future__ import annotations

from agent.proposers.rules import Workspace, propose_for
from tests.agent.rules.helpers import declines, failure, image_toolchains, propose, validate

RUNTIME = """#include <cuda_runtime.h>
#include <cstdio>

__global__ void scale(float* x, float s) { x[threadIdx.x] *= s; }

int launch(float* dev, const float* host, int n, cudaStream_t stream) {
  int device = 0;
  cudaGetDevice(&device);
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  cudaEventRecord(start, stream);
  cudaMemcpyAsync(dev, host, n * sizeof(float), cudaMemcpyHostToDevice, stream);
  cudaLaunchConfig_t config = {};
  config.gridDim = 1;
  config.blockDim = n;
  config.stream = stream;
  cudaLaunchAttribute attrs[1];
  attrs[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attrs[0].val.programmaticStreamSerializationAllowed = 1;
  config.attrs = attrs;
  config.numAttrs = 1;
  cudaLaunchKernelEx(&config, scale, dev, 2.0f);
  cudaEventRecord(stop, stream);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) printf("%s\\n", cudaGetErrorString(err));
  return device;
}
"""
GUARDED_HEADERS = """#ifdef USE_ROCM
#include <hip/hip_runtime.h>
#else
#include <cuda_runtime.h>
#endif
#include <cstdio>
""" + RUNTIME.split("#include <cstdio>\n", 1)[1]
COOP = """#ifdef USE_ROCM
#include <hip/hip_runtime.h>
#include <hip/hip_cooperative_groups.h>
#else
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#endif
#include <cstdint>

namespace cg = cooperative_groups;

__global__ void warp_max(uint64_t* x) {
  auto warp = cg::tiled_partition<32>(cg::this_thread_block());
  x[threadIdx.x] = cg::reduce(warp, x[threadIdx.x], cg::greater<uint64_t>{});
}
"""


def test_runtime_names_map_in_one_new_header_and_the_launch_attributes_drop(git_repo, rocm_image, nvcc):
    root = git_repo({"csrc/launch.cu": GUARDED_HEADERS})
    fail = failure("stream_api", "csrc/launch.cu", "cudaStream_t")
    prop = propose(root, fail)
    assert prop.files == ["csrc/launch.cu", "csrc/rocm_compat.h"]
    assert (
        "+#define cudaMemcpyAsync hipMemcpyAsync\n" in prop.diff
        and "+#define cudaEvent_t hipEvent_t\n" in prop.diff
    )
    assert '+#include "rocm_compat.h"\n' in prop.diff
    outcome = validate(root, image_toolchains(root, rocm_image, "gfx942"), prop, fail)
    assert outcome.kept, outcome.reason
    assert {c.name for c in outcome.checks if c.ok} >= {"hipcc gfx942 csrc/launch.cu", "nvcc csrc/launch.cu"}
    assert all(c.detail == "compiles" for c in outcome.checks if c.name.startswith("hipcc"))
    # the guarded include and the ROCm-only header leave CUDA's tokens as they were: nvcc is not run again
    assert all(c.ok and "same tokens" in c.detail for c in outcome.checks if c.name.startswith("nvcc"))
    assert not propose_for(fail, Workspace(root=root)).proposals  # idempotent: every name is mapped now


def test_unknown_runtime_name_uses_the_compilers_hip_suggestion(git_repo):
    root = git_repo(
        {"k.cu": "#include <hip/hip_runtime.h>\nint a = cudaDevAttrMaxThreadsPerMultiProcessor;\n"}
    )
    msg = (
        "use of undeclared identifier 'cudaDevAttrMaxThreadsPerMultiProcessor'; did you mean "
        "'hipDeviceAttributeMaxThreadsPerMultiProcessor'?"
    )
    prop = propose(root, failure("compile_error", "k.cu", "cudaDevAttrMaxThreadsPerMultiProcessor", msg))
    assert (
        "+#define cudaDevAttrMaxThreadsPerMultiProcessor hipDeviceAttributeMaxThreadsPerMultiProcessor\n"
        in prop.diff
    )


def test_runtime_name_without_a_hip_counterpart_declines(git_repo):
    root = git_repo({"k.cu": "int a = cudaNoSuchThing;\n"})
    assert (
        "no known HIP runtime counterpart"
        in declines(root, failure("compile_error", "k.cu", "cudaNoSuchThing"))[0]
    )


def test_cg_reduce_becomes_a_tile_reduction_on_rocm(git_repo, rocm_image, nvcc):
    root = git_repo({"csrc/topk.cu": COOP})
    msg = "no member named 'reduce' in namespace 'cooperative_groups'; did you mean simply 'reduce'?"
    fail = failure("compile_error", "csrc/topk.cu", "reduce", msg)
    prop = propose(root, fail)
    assert "+__device__ T reduce(const Tile& tile, T value, Op op) {\n" in prop.diff
    outcome = validate(root, image_toolchains(root, rocm_image, "gfx942"), prop, fail)
    assert outcome.kept, outcome.reason
    assert [c.detail for c in outcome.checks if c.name.startswith("hipcc")] == ["compiles"]


def test_tile_votes_are_declined_with_the_build_flag_that_declares_them(git_repo):
    root = git_repo({"csrc/k.cu": "__global__ void k(int* o) { if (warp.any(o[0])) o[1] = 1; }\n"})
    fail = failure(
        "compile_error",
        "csrc/k.cu",
        "any",
        "no member named 'any' in 'cooperative_groups::thread_block_tile<32>'",
    )
    assert any("-DHIP_ENABLE_WARP_SYNC_BUILTINS" in d for d in declines(root, fail))


SMEM = """#include <cuda_runtime.h>

// A kernel with 96 KiB of dynamic shared memory, opted in before its launch.
__global__ void __launch_bounds__(256) big_tile(float* out) {
  extern __shared__ float tile[];
  tile[threadIdx.x] = out[threadIdx.x];
  __syncthreads();
  out[threadIdx.x] = tile[255 - threadIdx.x];
}

cudaError_t launch_big_tile(float* out, cudaStream_t stream) {
  const int smem = 96 * 1024;
  cudaError_t err = cudaFuncSetAttribute(big_tile, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (err != cudaSuccess) return err;
  cudaFuncSetCacheConfig(big_tile, cudaFuncCachePreferShared);
  big_tile<<<1, 256, smem, stream>>>(out);
  return cudaGetLastError();
}
"""


def test_kernel_attribute_calls_take_the_kernel_as_on_cuda(git_repo, rocm_image, nvcc):
    """CUDA's cudaFuncSetAttribute is a template over the kernel; HIP 6.4's takes const void* only."""
    root = git_repo({"csrc/unit.cu": SMEM.replace("#include <cuda_runtime.h>\n", _GUARDED_RUNTIME)})
    fail = failure(
        "cuda_api",
        "csrc/unit.cu",
        "cudaFuncSetAttribute",
        "use of undeclared identifier 'cudaFuncSetAttribute'; did you mean 'hipFuncSetAttribute'?",
    )
    outcome = validate(root, image_toolchains(root, rocm_image, "gfx942"), propose(root, fail), fail)
    assert outcome.kept, outcome.reason
    assert all(c.ok for c in outcome.checks), [c.detail for c in outcome.checks]  # hipcc, nvcc, CUDA -E
    compat = (root / "csrc/rocm_compat.h").read_text()
    assert "return hipFuncSetAttribute(reinterpret_cast<const void*>(func), attr, value);" in compat
    assert "#define cudaFuncSetCacheConfig rocm_compat_cudaFuncSetCacheConfig" in compat
    assert not propose_for(fail, Workspace(root=root)).proposals


_GUARDED_RUNTIME = "#ifdef USE_ROCM\n#include <hip/hip_runtime.h>\n#else\n#include <cuda_runtime.h>\n#endif\n"


def test_grid_constant_expands_to_nothing_on_rocm(git_repo, rocm_image, nvcc):
    kernel = (
        "#ifdef USE_ROCM\n#include <hip/hip_runtime.h>\n#endif\nstruct Params { int n; float* out; };\n\n"
        "__global__ void k(const Params __grid_constant__ p) { p.out[threadIdx.x] = p.n; }\n"
    )
    root = git_repo({"csrc/k.cu": kernel})
    fail = failure("compile_error", "csrc/k.cu", "", "expected ')'")
    fail.line = 6
    prop = propose(root, fail)
    assert "+#define __grid_constant__\n" in prop.diff
    outcome = validate(root, image_toolchains(root, rocm_image, "gfx942"), prop, fail)
    assert outcome.kept, outcome.reason
    assert [c.detail for c in outcome.checks if c.name.startswith(("hipcc", "nvcc"))] == [
        "compiles",
        "not recompiled: its CUDA preprocessor output (nvcc's device and host pass) is the same tokens as before",
    ]


CHECK_H = """\
#pragma once
#include <cstdio>

#define RT_CHECK(call, code)                                                   \\
  do {                                                                         \\
    auto err_ = (call);                                                        \\
    if (err_ != cudaSuccess) {                                                 \\
      std::printf("%s:%d %s\\\\n", __FILE__, __LINE__, cudaGetErrorString(err_)); \\
      return code;                                                             \\
    }                                                                          \\
  } while (false)
"""
CHECK_CU = """\
#ifdef USE_ROCM
#include <hip/hip_runtime.h>
#endif
#include "check.h"

__global__ void zero(float* x) { x[threadIdx.x] = 0.f; }

int alloc_zeroed(float** x, int n) {
  RT_CHECK(cudaMallocManaged(x, n * sizeof(float)), 1);
  zero<<<1, n>>>(*x);
  RT_CHECK(cudaDeviceSynchronize(), 2);
  return 0;
}
"""


def test_runtime_names_inside_the_repos_check_macros_are_mapped_with_the_files_own(
    git_repo, rocm_image, nvcc
):
    """hipcc reports `cudaSuccess` at the .cu line that expands the header's check macro; the name is not
    in the .cu's text, and every runtime name of that macro must come with it or the unit still fails."""
    root = git_repo({"check.h": CHECK_H, "alloc.cu": CHECK_CU})
    fail = failure("cuda_api", "alloc.cu", "cudaSuccess", "use of undeclared identifier 'cudaSuccess'")
    prop = propose(root, fail)
    for name in ("cudaSuccess", "cudaGetErrorString", "cudaMallocManaged", "cudaDeviceSynchronize"):
        assert f"+#define {name} hip" in prop.diff
    outcome = validate(root, image_toolchains(root, rocm_image, "gfx942"), prop, fail)
    assert outcome.kept, outcome.reason
    assert all(c.ok for c in outcome.checks), [c.detail for c in outcome.checks]
    assert not propose_for(fail, Workspace(root=root)).proposals  # a second run adds nothing
