"""A semaphore whose PTX is picked by `__CUDA_ARCH__` (acquire/release on sm_70+, weak `.cg` before): hipcc
compiles the `#else`, and ROCm must get the sm_70+ ordering as agent-scope atomics, not plain accesses."""

from __future__ import annotations

import re

from agent.proposers.rules.ptx_forms import rewrite_known_ptx
from tests.agent.rules.helpers import device_code, prove_inline_ptx

# A cross-CTA ticket lock in the style of CUTLASS-derived semaphores, written for this test.
KERNEL = r"""#include <cstdint>

struct TicketLock {
  int* slot;
  int seen;

  __device__ void read() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
    asm volatile("ld.global.acquire.gpu.b32 %0, [%1];\n" : "=r"(seen) : "l"(slot));
#else
    asm volatile("ld.global.cg.b32 %0, [%1];\n" : "=r"(seen) : "l"(slot));
#endif
  }

  __device__ void pass(int ticket) {
#if __CUDA_ARCH__ >= 700
    asm volatile("st.global.release.gpu.b32 [%0], %1;\n" : : "l"(slot), "r"(ticket));
#else
    // before Volta: a weak store that skips L1
    asm volatile("st.global.cg.b32 [%0], %1;\n" : : "l"(slot), "r"(ticket));
#endif
  }
};

__global__ void ordered(int* lock, int* out) {
  TicketLock t{lock, -1};
  if (threadIdx.x == 0) {
    do t.read(); while (t.seen != int(blockIdx.x));
    out[blockIdx.x] = t.seen;
    t.pass(blockIdx.x + 1);
  }
}
"""


def test_the_pre_volta_fallback_gets_the_sm70_ordering_on_rocm(git_repo, rocm_image, nvcc):
    root, prop = prove_inline_ptx(git_repo, rocm_image, KERNEL, "ld.global.cg.b32", "=r")
    assert (
        "+    seen = __hip_atomic_load(reinterpret_cast<const uint32_t*>(slot), __ATOMIC_ACQUIRE, "
        "__HIP_MEMORY_SCOPE_AGENT);" in prop.diff
    )
    assert (
        "+    __hip_atomic_store(reinterpret_cast<uint32_t*>(slot), uint32_t(ticket), __ATOMIC_RELEASE, "
        "__HIP_MEMORY_SCOPE_AGENT);" in prop.diff
    )
    text = (root / "csrc/kernel.cuh").read_text()
    assert text.count("asm volatile(") == 4  # all four CUDA statements stay, each where it was
    ir = device_code(root, rocm_image, "-O1 -S -emit-llvm")
    assert re.search(r'load atomic i32, ptr(?: addrspace\(\d\))? %\w+ syncscope\("agent"\) acquire', ir), ir[
        -3000:
    ]
    assert re.search(r'store atomic i32 %\w+, ptr(?: addrspace\(\d\))? %\w+ syncscope\("agent"\) release', ir)


def test_other_architecture_branches_keep_their_own_form():
    ld = 'asm volatile("ld.global.cg.b32 %0, [%1];" : "=r"(v) : "l"(p));'
    newer = 'asm volatile("ld.global.acquire.gpu.b32 %0, [%1];" : "=r"(v) : "l"(p));'
    # ROCm compiles the #if branch of a `<` test (an undefined name reads as 0): the newer one is the #else
    older_first = f"#if __CUDA_ARCH__ < 700\n{ld}\n#else\n{newer}\n#endif\n"
    acquire = "v = __hip_atomic_load(reinterpret_cast<const uint32_t*>(p), __ATOMIC_ACQUIRE, __HIP_MEMORY_SCOPE_AGENT);"
    assert rewrite_known_ptx(older_first)[0].startswith(
        f"#if __CUDA_ARCH__ < 700\n#ifdef USE_ROCM\n{acquire}\n"
    )
    # a lone `#if __CUDA_ARCH__ < 700` with no #else: nothing newer to follow
    assert "__hip_atomic_load" not in rewrite_known_ptx(f"#if __CUDA_ARCH__ < 700\n{ld}\n#endif\n")[0]
    # a branch that does more than one asm statement is not a like-for-like choice
    busy = f"#if __CUDA_ARCH__ >= 700\n{newer}\n__threadfence();\n#else\n{ld}\n#endif\n"
    assert "__hip_atomic_load" not in rewrite_known_ptx(busy)[0]
    # three choices (#elif): left to the plain translation of what ROCm compiles
    chain = f"#if __CUDA_ARCH__ >= 900\n{newer}\n#elif __CUDA_ARCH__ >= 700\n{newer}\n#else\n{ld}\n#endif\n"
    assert "__hip_atomic_load" not in rewrite_known_ptx(chain)[0]
