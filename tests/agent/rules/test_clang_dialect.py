"""What nvcc accepts and clang rejects, fixed for ROCm only: constexpr device functions that call non-constexpr
math (-Winvalid-constexpr) and CUDA's float overloads of ::sincos."""

from __future__ import annotations

from agent.proposers.rules import Workspace, propose_for
from tests.agent.rules.helpers import failure, image_toolchains, propose, validate

CONSTEXPR = """#pragma once

namespace cx {

__device__ constexpr float ln10_inv_f() { return 1.f / ::log(10.f); }
__device__ constexpr double ln10_inv() { return 1.0 / ::log(10.); }

__device__ inline float decibels(float x) { return 10.f * ::log(x) * ln10_inv_f(); }

}  // namespace cx
"""
SINCOS = """#pragma once

namespace cx {

__device__ inline float2 rotate(float2 v, float turns) {
  float s, c;
  ::sincos(6.2831853f * turns, &s, &c);
  return make_float2(c * v.x - s * v.y, s * v.x + c * v.y);
}

}  // namespace cx
"""
RUNTIME = "#ifdef USE_ROCM\n#include <hip/hip_runtime.h>\n#else\n#include <cuda_runtime.h>\n#endif\n"


def _check(git_repo, rocm_image, header: str, call: str, fail):
    unit = RUNTIME + f'\n#include "cx.cuh"\n\n__global__ void k(float* x, float2* v) {{ {call}; }}\n'
    root = git_repo({"csrc/cx.cuh": header, "csrc/unit.cu": unit})
    prop = propose(root, fail)
    outcome = validate(root, image_toolchains(root, rocm_image, "gfx942"), prop, fail)
    assert outcome.kept, outcome.reason
    assert all(c.ok for c in outcome.checks), [c.detail for c in outcome.checks]  # hipcc, nvcc, CUDA -E
    assert not propose_for(fail, Workspace(root=root)).proposals  # a second run adds nothing
    return root, prop


def _fail(kind: str, symbol: str, message: str, line: int):
    fail = failure(kind, "csrc/cx.cuh", symbol, message)
    fail.line = line
    fail.facts["unit"] = "csrc/unit.cu"
    return fail


def test_constexpr_math_gets_a_rocm_only_diagnostic_pragma_around_both_functions(git_repo, rocm_image, nvcc):
    line = CONSTEXPR.splitlines().index(
        "__device__ constexpr float ln10_inv_f() { return 1.f / ::log(10.f); }"
    )
    fail = _fail(
        "compiler_dialect", "log", "constexpr function never produces a constant expression", line + 1
    )
    root, _prop = _check(git_repo, rocm_image, CONSTEXPR, "x[0] = cx::decibels(x[1])", fail)
    text = (root / "csrc/cx.cuh").read_text()
    assert (
        '#pragma clang diagnostic ignored "-Winvalid-constexpr"\n#endif\n__device__ constexpr float' in text
    )
    assert "ln10_inv() { return 1.0 / ::log(10.); }\n#ifdef USE_ROCM\n#pragma clang diagnostic pop\n" in text


def test_float_sincos_gets_the_overload_in_the_compat_header(git_repo, rocm_image, nvcc):
    line = SINCOS.splitlines().index("  ::sincos(6.2831853f * turns, &s, &c);") + 1
    fail = _fail("compile_error", "sincos", "no matching function for call to 'sincos'", line)
    root, _prop = _check(git_repo, rocm_image, SINCOS, "v[0] = cx::rotate(v[1], x[0])", fail)
    compat = (root / "csrc/rocm_compat.h").read_text()
    assert "__device__ inline void sincos(float x, float* s, float* c) { sincosf(x, s, c); }" in compat
    assert '#include "rocm_compat.h"' in (root / "csrc/cx.cuh").read_text()


def test_a_constexpr_error_on_a_line_without_a_definition_is_left_alone(git_repo):
    root = git_repo({"csrc/cx.cuh": CONSTEXPR, "csrc/unit.cu": '#include "cx.cuh"\n'})
    fail = _fail("compiler_dialect", "log", "constexpr function never produces a constant expression", 1)
    assert not propose_for(fail, Workspace(root=root)).proposals
