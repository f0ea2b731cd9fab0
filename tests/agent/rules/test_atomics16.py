"""16-bit atomics (atomicAdd on half/bf16 and their pairs, atomicCAS on unsigned short) and block-scope
atomics, which ROCm 6.4's HIP lacks, get compat-header definitions: CAS loops on the 32-bit word."""

from __future__ import annotations

from agent.proposers.rules import Workspace, propose_for
from tests.agent.rules.helpers import device_code, failure, image_toolchains, propose, validate

UNIT = """#ifdef USE_ROCM
#include <hip/hip_bf16.h>
#include <hip/hip_fp16.h>
typedef __hip_bfloat16 __nv_bfloat16;
typedef __hip_bfloat162 __nv_bfloat162;
#else
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

// Scatter-adds token gradients into an embedding table and claims a slot per row.
__global__ void k(half* h, __nv_bfloat16* b, half2* h2, __nv_bfloat162* b2, unsigned short* slots, int* hits,
                  const int* rows) {
  const int r = rows[threadIdx.x];
  atomicAdd(h + r, __float2half(1.f));
  atomicAdd(b + r, __float2bfloat16(1.f));
  atomicAdd(h2 + r, __floats2half2_rn(1.f, 2.f));
  atomicAdd(b2 + r, __bfloat162bfloat162(__float2bfloat16(1.f)));
  if (atomicCAS(slots + r, (unsigned short)0, (unsigned short)(threadIdx.x + 1)) == 0) atomicAdd_block(hits, 1);
  atomicMax_block(hits + 1, r);
}
"""


def test_16bit_and_block_scope_atomics_compile_on_both(git_repo, rocm_image, nvcc):
    root = git_repo({"csrc/unit.cu": UNIT})
    fail = failure("fp16_type", "csrc/unit.cu", "atomicAdd", "no matching function for call to 'atomicAdd'")
    outcome = validate(root, image_toolchains(root, rocm_image, "gfx942"), propose(root, fail), fail)
    assert outcome.applied, outcome.reason
    compat = (root / "csrc/rocm_compat.h").read_text()
    for sig in (
        "__half atomicAdd(__half*",
        "__half2 atomicAdd(__half2*",
        "__hip_bfloat16 atomicAdd(__hip_bfloat16*",
    ):
        assert sig in compat, sig
    assert "__hip_bfloat162 atomicAdd(__hip_bfloat162*" in compat
    assert "atomicCAS(unsigned short*" not in compat  # the atomicCAS failure brings that one
    assert (
        " atomicAdd_block(" in compat and " atomicMax_block(" in compat
    )  # the file's block-scope atomics too
    cas = failure(
        "compile_error", "csrc/unit.cu", "atomicCAS", "no matching function for call to 'atomicCAS'"
    )
    outcome = validate(root, image_toolchains(root, rocm_image, "gfx942"), propose(root, cas), cas)
    assert outcome.kept, outcome.reason
    assert all(c.ok for c in outcome.checks), [c.detail for c in outcome.checks]  # hipcc, nvcc, CUDA -E
    compat = (root / "csrc/rocm_compat.h").read_text()
    assert "unsigned short atomicCAS(unsigned short* address" in compat
    assert compat.count("rocm_compat_atomic16(unsigned short* address, Op op)") == 1  # the helper once
    asm = device_code(root, rocm_image, "-S")
    assert "global_atomic_cmpswap" in asm  # the CAS loops
    assert not propose_for(cas, Workspace(root=root)).proposals  # a second run adds nothing
    assert not propose_for(fail, Workspace(root=root)).proposals


def test_an_atomic_on_a_type_no_rule_knows_is_left_alone(git_repo):
    root = git_repo(
        {"csrc/unit.cu": "__global__ void k(float4* p) { atomicAdd(p, make_float4(1, 1, 1, 1)); }\n"}
    )
    fail = failure(
        "compile_error", "csrc/unit.cu", "atomicAdd", "no matching function for call to 'atomicAdd'"
    )
    assert not propose_for(fail, Workspace(root=root)).proposals
