"""Files that include no CUDA header yet use `__forceinline__`, `uint4`, `threadIdx` (nvcc's implicit
cuda_runtime.h) get the HIP runtime under USE_ROCM, below their license and include guard."""

from __future__ import annotations

from agent.proposers.rules import Workspace, propose_for
from tests.agent.rules.helpers import failure, image_toolchains, propose, validate

STARS = "*" * 78
LICENSE = f"/{STARS}\n * Copyright (c) 2026, the authors.\n {STARS}/\n"
BODY = """namespace mix {

// Four lanes of a counter-based hash, one round.
__forceinline__ __device__ uint4 round4(uint4 a, unsigned k) {
  return make_uint4(a.x ^ k, a.y + k, a.z * k, a.w - k);
}

}  // namespace mix
"""
PRAGMA_ONCE = LICENSE + "\n#pragma once\n\n" + BODY
GUARDED = LICENSE + "\n#ifndef MIX_ROUND_H_\n#define MIX_ROUND_H_\n\n" + BODY + "\n#endif  // MIX_ROUND_H_\n"
UNIT = '#include <cstdint>\n\n#include "mix/round.h"\n\n__global__ void k(uint4* x) { x[0] = mix::round4(x[0], 7u); }\n'
BLOCK = "#ifdef USE_ROCM\n#include <hip/hip_runtime.h>\n#endif\n"


def _fail(symbol: str, message: str, file: str = "mix/round.h"):
    fail = failure("compile_error", file, symbol, message)
    fail.facts["unit"] = "k.cu"
    return fail


def test_a_header_without_includes_gets_the_hip_runtime_below_its_license_and_pragma_once(
    git_repo, rocm_image, nvcc
):
    root = git_repo({"mix/round.h": PRAGMA_ONCE, "k.cu": UNIT})
    fail = _fail("__forceinline__", "unknown type name '__forceinline__'")
    outcome = validate(root, image_toolchains(root, rocm_image, "gfx942"), propose(root, fail), fail)
    assert outcome.kept, outcome.reason
    assert all(c.ok for c in outcome.checks), [c.detail for c in outcome.checks]  # hipcc, nvcc, CUDA -E
    text = (root / "mix/round.h").read_text()
    assert text.startswith(LICENSE)  # never above the license
    assert "\n#pragma once\n\n" + BLOCK + "\nnamespace mix {\n" in text
    assert not propose_for(fail, Workspace(root=root)).proposals  # a second run adds nothing


def test_an_include_guarded_header_gets_it_inside_the_guard(git_repo):
    root = git_repo({"mix/round.h": GUARDED, "k.cu": UNIT})
    prop = propose(root, _fail("uint4", "use of undeclared identifier 'uint4'"))
    assert (
        " #define MIX_ROUND_H_\n+\n+#ifdef USE_ROCM\n+#include <hip/hip_runtime.h>\n+#endif\n \n namespace"
        in (prop.diff)
    )


def test_a_unit_without_includes_keeps_its_doc_comment_next_to_the_code(git_repo):
    src = "// Copyright the authors.\n\n// Scales by two.\n__global__ void k(float* x) { x[threadIdx.x] *= 2; }\n"
    root = git_repo({"k.cu": src})
    prop = propose(
        root, failure("compile_error", "k.cu", "threadIdx", "use of undeclared identifier 'threadIdx'")
    )
    assert " // Copyright the authors.\n+\n+#ifdef USE_ROCM\n" in prop.diff
    assert "+#endif\n \n // Scales by two.\n __global__" in prop.diff


def test_a_name_nvcc_does_not_declare_is_left_to_other_rules(git_repo):
    root = git_repo({"mix/round.h": PRAGMA_ONCE.replace("uint4", "uint4x"), "k.cu": UNIT})
    fail = _fail("uint4x", "unknown type name 'uint4x'")
    assert not propose_for(fail, Workspace(root=root)).proposals


def test_bit_intrinsics_conversions_and_align_come_with_the_runtime_too(git_repo, rocm_image, nvcc):
    """hipcc declares the float fast-math (`__expf`) itself, but not these: each fails without the include."""
    src = (
        "struct __align__(16) Pair { float a, b; };\n\n"
        "__global__ void k(Pair* p, unsigned* u, int* n) {\n"
        "  u[0] = __byte_perm(u[0], u[1], 0x3210) + __popc(u[1]) + __float2uint_rz(p->a);\n"
        "  atomicAdd(n, __float2int_rn(p->b) + __double2int_rn(1.0));\n"
        "}\n"
    )
    fresh = git_repo({"k.cu": src}, name="fresh")
    for name in ("__byte_perm", "__popc", "__float2uint_rz", "atomicAdd", "__double2int_rn"):
        named = failure("compile_error", "k.cu", name, f"use of undeclared identifier '{name}'")
        assert propose(fresh, named).files == ["k.cu"]
    root = git_repo({"k.cu": src})
    fail = failure("compile_error", "k.cu", "", "expected unqualified-id")
    fail.excerpt = "struct __align__(16) Pair { float a, b; };"
    outcome = validate(root, image_toolchains(root, rocm_image, "gfx942"), propose(root, fail), fail)
    assert outcome.kept, outcome.reason
    assert (root / "k.cu").read_text().startswith(BLOCK + "struct __align__(16) Pair")
    assert not propose_for(fail, Workspace(root=root)).proposals  # a second run adds nothing


def test_a_kernel_in_a_unit_without_includes_gets_the_runtime_for_its_launch(git_repo, rocm_image, nvcc):
    root = git_repo({"k.cu": "// Copyright the authors.\n\n__global__ void k(float* x) { x[0] = 1.f; }\n"})
    fail = failure("compile_error", "k.cu", "", "Can't find declaration for hipLaunchKernel")
    outcome = validate(root, image_toolchains(root, rocm_image, "gfx942"), propose(root, fail), fail)
    assert outcome.kept, outcome.reason
    assert (root / "k.cu").read_text().startswith("// Copyright the authors.\n\n" + BLOCK + "\n__global__")


def test_vector_types_and_functions_headers_become_the_hip_runtime(git_repo, rocm_image, nvcc):
    """hip_vector_types.h alone would leave the unit's kernel without its launch declarations."""
    header = (
        "#include <vector_types.h>\n#include <vector_functions.h>\n\n__device__ float3 twice(float3 a);\n"
    )
    root = git_repo(
        {"csrc/v.cuh": header, "csrc/k.cu": '#include "v.cuh"\n__global__ void k(float3* p) {}\n'}
    )
    fail = failure("cuda_header", "csrc/v.cuh", "vector_types.h")
    fail.facts["unit"] = "csrc/k.cu"
    outcome = validate(root, image_toolchains(root, rocm_image, "gfx942"), propose(root, fail), fail)
    assert outcome.kept, outcome.reason
    assert (
        (root / "csrc/v.cuh")
        .read_text()
        .startswith("#ifdef USE_ROCM\n#include <hip/hip_runtime.h>\n#else\n#include <vector_types.h>\n")
    )
