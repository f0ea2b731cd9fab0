"""Helper-math style headers that clash with HIP's own definitions: host fallbacks under `#ifndef __CUDACC__`
(hipcc defines __HIPCC__ instead) and element-wise vector operators HIP_vector_type already has."""

from __future__ import annotations

from agent.proposers.rules import Workspace, propose_for
from tests.agent.rules.helpers import failure, image_toolchains, propose, validate

GUARDED_RUNTIME = "#ifdef USE_ROCM\n#include <hip/hip_runtime.h>\n#else\n#include <cuda_runtime.h>\n#endif\n"
HOST = (
    GUARDED_RUNTIME
    + """
#ifndef __CUDACC__
#include <math.h>
inline int max(int a, int b) { return a > b ? a : b; }
inline float fminf(float a, float b) { return a < b ? a : b; }
#endif

#ifdef __CUDACC__
#define HD __host__ __device__
#else
#define HD
#endif

HD inline int clamp_index(int i, int n) { return max(0, i < n ? i : n - 1); }
"""
)
UNIT = '#include "helpers.cuh"\n\n__global__ void k(int* x, int n) { x[0] = clamp_index(x[1], n); }\n'
VEC = (
    GUARDED_RUNTIME
    + """
inline __host__ __device__ float3 operator-(float3 a, float3 b) { return make_float3(a.x - b.x, a.y - b.y, a.z - b.z); }

inline __host__ __device__ float3 operator*(float3 a, float3 b) {
  return make_float3(a.x * b.x, a.y * b.y, a.z * b.z);
}
inline __host__ __device__ float3 operator/(const float3& a, const float3& b) {
  return make_float3(a.x / b.x, a.y / b.y, a.z / b.z);
}
inline __host__ __device__ float3 operator*(float3 a, float s) { return make_float3(a.x * s, a.y * s, a.z * s); }
"""
)
VEC_UNIT = (
    '#include "helpers.cuh"\n\n__global__ void k(float3* p, float3 lo, float3 hi) {\n'
    "  p[0] = (p[0] - lo) / (hi - lo) * make_float3(2.f, 2.f, 2.f) * 0.5f;\n}\n"
)


def _fail(message: str, line: int | None, file: str = "csrc/helpers.cuh"):
    fail = failure("compile_error", file, "max", message)
    fail.line = line
    fail.facts["unit"] = "csrc/unit.cu"
    return fail


def test_a_host_only_branch_hipcc_took_also_tests_hipcc(git_repo, rocm_image, nvcc):
    root = git_repo({"csrc/helpers.cuh": HOST, "csrc/unit.cu": UNIT})
    line = HOST.splitlines().index("inline int max(int a, int b) { return a > b ? a : b; }") + 1
    fail = _fail("redefinition of 'max'", line)
    outcome = validate(root, image_toolchains(root, rocm_image, "gfx942"), propose(root, fail), fail)
    assert outcome.kept, outcome.reason
    assert all(c.ok for c in outcome.checks), [c.detail for c in outcome.checks]  # hipcc, nvcc, CUDA -E
    text = (root / "csrc/helpers.cuh").read_text()
    # both tests of the file, so clamp_index is __host__ __device__ on ROCm too (the kernel calls it)
    assert "#if !defined(__CUDACC__) && !defined(__HIPCC__)\n#include <math.h>" in text
    assert "#if defined(__CUDACC__) || defined(__HIPCC__)\n#define HD __host__ __device__" in text
    assert not propose_for(fail, Workspace(root=root)).proposals  # a second run adds nothing


def test_an_error_outside_a_cudacc_branch_is_left_to_other_rules(git_repo):
    root = git_repo({"csrc/helpers.cuh": HOST, "csrc/unit.cu": UNIT})
    line = HOST.splitlines().index(
        "HD inline int clamp_index(int i, int n) { return max(0, i < n ? i : n - 1); }"
    )
    assert not propose_for(_fail("no matching function", line + 1), Workspace(root=root)).proposals


def test_vector_operators_hip_defines_go_under_not_rocm_and_the_others_stay(git_repo, rocm_image, nvcc):
    root = git_repo({"csrc/helpers.cuh": VEC, "csrc/unit.cu": VEC_UNIT})
    msg = (
        "use of overloaded operator '/' is ambiguous "
        "(with operand types 'float3' (aka 'HIP_vector_type<float, 3>') and 'float3')"
    )
    fail = _fail(msg, 4, file="csrc/unit.cu")
    outcome = validate(root, image_toolchains(root, rocm_image, "gfx942"), propose(root, fail), fail)
    assert outcome.kept, outcome.reason
    assert all(c.ok for c in outcome.checks), [c.detail for c in outcome.checks]
    text = (root / "csrc/helpers.cuh").read_text()
    # the two same-type definitions, adjacent, under one guard (found in the header the unit includes)
    assert "#ifndef USE_ROCM\ninline __host__ __device__ float3 operator*(float3 a, float3 b) {" in text
    assert "a.z / b.z);\n}\n#endif\n" in text and text.count("#ifndef USE_ROCM") == 1
    # operator- and the scalar operator* are templates in HIP: the repo's own still wins, so they stay
    guarded = text.split("#ifndef USE_ROCM\n", 1)[1].split("#endif\n", 1)[0]
    assert "operator-" not in guarded and "float s" not in guarded
    assert not propose_for(fail, Workspace(root=root)).proposals
