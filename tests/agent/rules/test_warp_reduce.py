"""sm_80 warp reductions (`__reduce_add_sync` & co), which HIP lacks, over a full mask in a 32-lane kernel
become a 32-lane shfl_xor butterfly in the compat header; a partial mask is left to a human."""

from __future__ import annotations

from agent.proposers.rules import Workspace, propose_for
from tests.agent.rules.helpers import device_code, failure, image_toolchains, propose, validate

RUNTIME = "#ifdef USE_ROCM\n#include <hip/hip_runtime.h>\n#else\n#include <cuda_runtime.h>\n#endif\n"
HEADER = (
    "#pragma once\n"
    + RUNTIME
    + """
// Per-warp sum and maximum of a key's low byte.
__device__ inline unsigned warp_sum(unsigned k) { return __reduce_add_sync(0xffffffffu, k & 0xffu); }
__device__ inline int warp_peak(int k) { return __reduce_max_sync(0xffffffff, k); }
"""
)
UNIT = (
    '#include "stats.cuh"\n\n'
    "__global__ void k(unsigned* u, int* p) { u[0] = warp_sum(u[threadIdx.x]); p[0] = warp_peak(p[1]); }\n"
)


def _fail():
    fail = failure(
        "warp_intrinsic",
        "csrc/stats.cuh",
        "__reduce_add_sync",
        "use of undeclared identifier '__reduce_add_sync'",
    )
    fail.facts["unit"] = "csrc/unit.cu"
    return fail


def test_full_mask_reductions_become_a_32_lane_butterfly(git_repo, rocm_image, nvcc):
    root = git_repo({"csrc/stats.cuh": HEADER, "csrc/unit.cu": UNIT})
    fail = _fail()
    outcome = validate(root, image_toolchains(root, rocm_image, "gfx942"), propose(root, fail), fail)
    assert outcome.kept, outcome.reason
    assert all(c.ok for c in outcome.checks), [c.detail for c in outcome.checks]  # hipcc, nvcc, CUDA -E
    compat = (root / "csrc/rocm_compat.h").read_text()
    assert (
        "__reduce_add_sync(unsigned, unsigned v)" in compat and "__reduce_max_sync(unsigned, int v)" in compat
    )
    assert "__shfl_xor(v, offset, 32)" in compat and "__reduce_or_sync" not in compat
    assert "ds_bpermute_b32" in device_code(root, rocm_image, "-S")  # the lanes really exchange values
    assert not propose_for(fail, Workspace(root=root)).proposals  # a second run adds nothing


def test_a_partial_mask_is_declined(git_repo):
    root = git_repo({"csrc/stats.cuh": HEADER.replace("0xffffffffu, k & 0xffu", "0x0000ffffu, k")})
    result = propose_for(_fail(), Workspace(root=root))
    assert not result.proposals and any("full mask" in d for d in result.declines)
