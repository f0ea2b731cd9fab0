"""inline_ptx with a known ROCm form: rewritten under USE_ROCM, CUDA branch untouched, proven on gfx942 + nvcc."""

from __future__ import annotations

from agent.proposers.rules import Workspace, propose_for
from tests.agent.rules.helpers import declines, failure, image_toolchains, propose, validate

KERNEL = """#ifdef USE_ROCM
#include <hip/hip_runtime.h>
#endif
#include <cstdint>

__device__ uint32_t bits_of(float x) {
  uint32_t bits;
  asm("mov.b32 %0, %1;" : "=r"(bits) : "f"(x));
  return bits;
}
__device__ int lane_id() {
  int lane;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
  return lane;
}
__device__ uint32_t load_streaming(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.global.cs.u32 %0, [%1];" : "=r"(v) : "l"(p));
  return v;
}
__global__ void k(float* x, uint32_t* y) { y[threadIdx.x] = bits_of(x[0]) + lane_id() + load_streaming(y); }
"""


def test_known_ptx_forms_get_their_rocm_spelling_and_cuda_keeps_the_asm(git_repo, rocm_image, nvcc):
    root = git_repo({"csrc/k.cu": KERNEL})
    fail = failure("inline_ptx", "csrc/k.cu", "mov.b32", "invalid input constraint 'f' in asm")
    prop = propose(root, fail)
    assert (
        '+  lane = __lane_id();\n+#else\n   asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));\n'
        in prop.diff
    )
    assert "__builtin_nontemporal_load(reinterpret_cast<const uint32_t*>(p))" in prop.diff  # .cs is streaming
    assert "-  asm" not in prop.diff  # the CUDA statements are not edited
    outcome = validate(root, image_toolchains(root, rocm_image, "gfx942"), prop, fail)
    assert outcome.kept, outcome.reason
    # the asm stays in the CUDA branch: proven unchanged for CUDA from the text, so nvcc is not rerun
    assert [c.detail for c in outcome.checks if c.name.startswith(("hipcc", "nvcc"))] == [
        "compiles",
        "not recompiled: its CUDA input is unchanged (above)",
    ]
    assert not propose_for(fail, Workspace(root=root)).proposals


def test_tensor_core_ptx_is_still_declined(git_repo):
    root = git_repo({"k.cu": 'void f() { asm volatile("mma.sync.aligned.m16n8k16 ..." ::); }\n'})
    reason = declines(root, failure("inline_ptx", "k.cu", "mma.sync"))[0]
    assert "tensor-core PTX" in reason
