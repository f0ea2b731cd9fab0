"""A repo's own float atomicMin/atomicMax (CUDA lacks them; HIP defines them) go under #ifndef USE_ROCM when
clang's note puts the earlier definition in HIP's headers; an atomic on a type HIP does not cover stays."""

from __future__ import annotations

from agent.proposers.rules import Workspace, propose_for
from tests.agent.rules.helpers import failure, image_toolchains, propose, validate

RUNTIME = "#ifdef USE_ROCM\n#include <hip/hip_runtime.h>\n#else\n#include <cuda_runtime.h>\n#endif\n"
CAS = """  int* const bits = reinterpret_cast<int*>(address);
  int old = *bits, assumed;
  do {
    assumed = old;
    if (__int_as_float(assumed) {op} value) break;
    old = atomicCAS(bits, assumed, __float_as_int(value));
  } while (assumed != old);
}
"""
HEADER = (
    "#pragma once\n"
    + RUNTIME
    + "\n/// Float minimum by compare-and-swap.\n__device__ __forceinline__ void atomicMin(\n"
    + "    float* const address, const float value) {\n"
    + CAS.replace("{op}", "<=")
    + "\n__device__ __forceinline__ void atomicMax(float* const address, const float value) {\n"
    + CAS.replace("{op}", ">=")
    + "\nstruct Pair { int a, b; };\n__device__ inline void atomicMax(Pair* p, Pair v) { atomicMax(&p->a, v.a); }\n"
)
UNIT = (
    '#include "atomics.cuh"\n\n__global__ void k(const float* d, float* lo, float* hi, Pair* p) {\n'
    "  atomicMin(lo, d[threadIdx.x]);\n  atomicMax(hi, d[threadIdx.x]);\n  atomicMax(p, Pair{1, 2});\n}\n"
)
NOTE = (
    "csrc/atomics.cuh:{line}:33: error: functions that differ only in their return type cannot be overloaded\n"
    "/usr/include/hip/amd_detail/amd_hip_atomic.h:611:7: note: previous definition is here\n"
)


def _fail(note: str = NOTE):
    line = HEADER.splitlines().index("__device__ __forceinline__ void atomicMin(") + 1
    fail = failure(
        "compile_error",
        "csrc/atomics.cuh",
        "",
        "functions that differ only in their return type cannot be overloaded",
    )
    fail.line, fail.excerpt = line, note.format(line=line)
    fail.facts["unit"] = "csrc/unit.cu"
    return fail


def test_own_float_atomics_give_way_to_hips_and_other_types_stay(git_repo, rocm_image, nvcc):
    root = git_repo({"csrc/atomics.cuh": HEADER, "csrc/unit.cu": UNIT})
    fail = _fail()
    outcome = validate(root, image_toolchains(root, rocm_image, "gfx942"), propose(root, fail), fail)
    assert outcome.kept, outcome.reason
    assert all(c.ok for c in outcome.checks), [c.detail for c in outcome.checks]  # hipcc, nvcc, CUDA -E
    text = (root / "csrc/atomics.cuh").read_text()
    assert text.count("#ifndef USE_ROCM\n") == 2  # both float atomics (clang reports them with one message)
    assert "/// Float minimum by compare-and-swap.\n// HIP defines" in text  # the doc comment stays above
    assert "#endif\n\nstruct Pair" in text and "atomicMax(Pair* p, Pair v)" in text.split("#endif\n")[-1]
    assert not propose_for(fail, Workspace(root=root)).proposals  # a second run adds nothing


def test_a_clash_with_a_non_hip_header_is_left_alone(git_repo):
    root = git_repo({"csrc/atomics.cuh": HEADER, "csrc/unit.cu": UNIT})
    fail = _fail(NOTE.replace("/usr/include/hip/amd_detail/amd_hip_atomic.h", "csrc/other.cuh"))
    assert not propose_for(fail, Workspace(root=root)).proposals
