"""Directed-rounding intrinsics hipcc lacks (`__fmaf_rd` & co) become device functions in the compat header:
exact through the device library's rounded add/sub/mul/fma, to-nearest (said so) for division and sqrt."""

from __future__ import annotations

import subprocess

from agent.proposers.rules import Workspace, propose_for
from tests.agent.rules.helpers import device_code, failure, image_toolchains, propose, validate

KERNEL = """#pragma once
#include <cuda_runtime.h>

// Interval bounds of a dot product: the lower end rounded down, the upper end rounded up.
__device__ __forceinline__ float2 dot_bounds(const float* a, const float* b, int n) {
  float lo = 0.f, hi = 0.f;
  for (int i = 0; i < n; ++i) {
    lo = __fmaf_rd(a[i], b[i], lo);
    hi = __fmaf_ru(a[i], b[i], hi);
  }
  return make_float2(lo, hi);
}

__device__ __forceinline__ double scale_down(double x, double s) { return __dmul_rz(x, s); }

__device__ __forceinline__ float ratio_down(float x, float y) { return __fdiv_rd(x, y); }
"""
UNIT = """#include "bounds.cuh"

__global__ void k(const float* a, const float* b, float2* out, double* d, int n) {
  out[0] = dot_bounds(a, b, n);
  d[0] = scale_down(d[1], d[2]);
  out[1].x = ratio_down(a[0], b[0]);
}
"""


def _fail(symbol: str):
    fail = failure("compile_error", "csrc/bounds.cuh", symbol, f"use of undeclared identifier '{symbol}'")
    fail.facts["unit"] = "csrc/unit.cu"
    return fail


def test_directed_rounding_compiles_on_rocm_with_the_hardware_rounding_mode(git_repo, rocm_image, nvcc):
    root = git_repo({"csrc/bounds.cuh": KERNEL, "csrc/unit.cu": UNIT})
    fail = _fail("__fmaf_rd")
    # the header rule guards cuda_runtime.h first in a real fix (hipcc's first error); done here by hand
    guarded = "#ifdef USE_ROCM\n#include <hip/hip_runtime.h>\n#else\n#include <cuda_runtime.h>\n#endif"
    (root / "csrc/bounds.cuh").write_text(KERNEL.replace("#include <cuda_runtime.h>", guarded))
    subprocess.run(["git", "commit", "-qam", "guard"], cwd=root, check=True)
    prop = propose(root, fail)
    outcome = validate(root, image_toolchains(root, rocm_image, "gfx942"), prop, fail)
    assert outcome.kept, outcome.reason
    assert all(c.ok for c in outcome.checks), [c.detail for c in outcome.checks]  # hipcc, nvcc, CUDA -E
    compat = (root / "csrc/rocm_compat.h").read_text()
    for name in ("__fmaf_rd", "__fmaf_ru", "__dmul_rz", "__fdiv_rd"):  # every one the file uses, at once
        assert f" {name}(" in compat
    assert "round to\n// nearest" in compat and "__fdiv_rd" in prop.rationale  # the division caveat is said
    asm = device_code(root, rocm_image, "-S")
    # round toward -inf (2), +inf (1) for f32 and toward zero (3) for f64 around the fma/mul
    for mode in ("hwreg(HW_REG_MODE, 0, 2), 2", "hwreg(HW_REG_MODE, 0, 2), 1", "hwreg(HW_REG_MODE, 2, 2), 3"):
        assert f"s_setreg_imm32_b32 {mode}" in asm, mode
    assert not propose_for(fail, Workspace(root=root)).proposals  # a second run adds nothing


def test_names_the_device_library_lacks_never_reach_it_and_others_are_left_alone(git_repo):
    root = git_repo({"csrc/bounds.cuh": KERNEL, "csrc/unit.cu": UNIT})
    diff = propose(root, _fail("__fdiv_rd")).diff
    assert "__ocml_div" not in diff and "return __fdiv_rn(x, y);" in diff
    assert "return __ocml_fma_rtp_f32(x, y, z);" in diff
    other = failure(
        "compile_error", "csrc/bounds.cuh", "__fmaf_rq", "use of undeclared identifier '__fmaf_rq'"
    )
    assert not propose_for(other, Workspace(root=root)).proposals
