"""libcu++ atomics (`cuda/atomic`, `cuda/std/atomic`) on ROCm 6.4, which has no libhipcxx: the files that
include them include a compat-header shim on `__hip_atomic_*` instead, with the same orders and scopes."""

from __future__ import annotations

from agent.proposers.rules import Workspace, propose_for
from tests.agent.rules.helpers import declines, device_code, failure, image_toolchains, propose, validate

COUNTERS = """\
// Work counters shared by every block of one launch.
#pragma once

#include <cuda/atomic>

struct Counters {
  cuda::atomic<unsigned long long, cuda::thread_scope_device> claimed;
  cuda::atomic<int, cuda::thread_scope_system> done;
};
"""
FLAGS = """\
#pragma once

#include <cuda/std/atomic>
#include <cuda/std/type_traits>

template <typename T>
__device__ void raise_flag(T* word) {
  static_assert(cuda::std::is_integral<T>::value, "flags are integers");
  cuda::std::atomic_ref<T> ref(*word);
  ref.store(T(1), cuda::std::memory_order_release);
}
"""
UNIT = """\
#include <cuda/atomic>

#include "counters.cuh"
#include "flags.cuh"

__global__ void claim(Counters* c, int* out, int* flag) {
  const unsigned long long slot = c->claimed.fetch_add(1, cuda::memory_order_relaxed);
  cuda::atomic_ref<int, cuda::thread_scope_block> best(out[slot % 32]);
  best.fetch_max(static_cast<int>(slot), cuda::memory_order_acq_rel);
  int expected = 0;
  best.compare_exchange_strong(expected, 1, cuda::memory_order_acq_rel);
  cuda::atomic_thread_fence(cuda::memory_order_release, cuda::thread_scope_device);
  if (slot == 0) c->done.store(1, cuda::memory_order_release);
  raise_flag(flag);
  out[0] = c->done.load(cuda::memory_order_acquire);
}
"""


def _fail(header: str, file: str = "csrc/counters.cuh"):
    fail = failure("cuda_std", file, header, f"fatal error: '{header}' file not found")
    fail.facts["unit"] = "csrc/unit.cu"
    return fail


def test_every_file_of_the_unit_gets_the_shim_which_keeps_orders_and_scopes(git_repo, rocm_image, nvcc):
    root = git_repo({"csrc/counters.cuh": COUNTERS, "csrc/flags.cuh": FLAGS, "csrc/unit.cu": UNIT})
    fail = _fail("cuda/atomic")
    prop = propose(root, fail)
    assert sorted(prop.files) == ["csrc/counters.cuh", "csrc/flags.cuh", "csrc/rocm_compat.h", "csrc/unit.cu"]
    outcome = validate(root, image_toolchains(root, rocm_image, "gfx942"), prop, fail)
    assert outcome.kept, outcome.reason
    assert all(c.ok for c in outcome.checks), [c.detail for c in outcome.checks]  # hipcc, nvcc, CUDA -E
    assert "#else\n#include <cuda/atomic>\n#endif" in (root / "csrc/counters.cuh").read_text()
    ir = device_code(root, rocm_image, "-O1 -S -emit-llvm")
    assert (
        "atomicrmw add ptr addrspace(1) %" in ir and 'syncscope("agent") monotonic' in ir
    )  # device, relaxed
    assert "atomicrmw max" in ir and 'syncscope("workgroup") acq_rel' in ir  # block scope
    assert "cmpxchg" in ir and 'syncscope("workgroup") acq_rel acquire' in ir  # failure order of acq_rel
    assert 'fence syncscope("agent") seq_cst' in ir
    assert "store atomic i32 1, ptr addrspace(1)" in ir and " release" in ir  # system scope: no syncscope
    for header in ("cuda/atomic", "cuda/std/atomic"):  # a second run adds nothing
        assert not propose_for(_fail(header), Workspace(root=root)).proposals


def test_the_repos_own_compat_header_gets_the_shim_once(git_repo):
    compat = "#ifndef ROCM_COMPAT_H\n#define ROCM_COMPAT_H\n#define COMPAT_LDG(ptr) (*(ptr))\n#endif\n"
    root = git_repo(
        {
            "csrc/counters.cuh": COUNTERS,
            "csrc/unit.cu": UNIT.replace('#include "flags.cuh"\n', ""),
            "csrc/util/rocm_compat.h": compat,
        }
    )
    prop = propose(root, _fail("cuda/atomic"))
    assert sorted(prop.files) == ["csrc/counters.cuh", "csrc/unit.cu", "csrc/util/rocm_compat.h"]
    assert '+#include "util/rocm_compat.h"' in prop.diff
    assert prop.diff.count("class atomic_ref {") == 1


def test_other_libcudacxx_facilities_are_declined_with_the_reason(git_repo):
    root = git_repo({"csrc/unit.cu": "#include <cuda/barrier>\n__global__ void k() {}\n"})
    (why,) = declines(root, _fail("cuda/barrier", "csrc/unit.cu"))
    assert "needs libhipcxx, which ROCm 6.4 does not ship" in why


TILES = """\
#include <cuda/cmath>
#include <cuda/functional>

__global__ void tiles(const int* x, int* best, int n, unsigned tile) {
  const unsigned tiles = cuda::ceil_div(static_cast<unsigned>(n), tile);
  int m = x[0];
  for (unsigned t = 1; t < tiles; ++t) m = cuda::maximum<>{}(m, x[t * tile]);
  best[0] = cuda::minimum<int>{}(m, static_cast<int>(cuda::round_up(tiles, 4u)));
}
"""


def test_cccl_maximum_minimum_and_ceil_div_get_their_shims(git_repo, rocm_image, nvcc):
    """CCCL's replacements for cub::Max/Min and its ceil_div: ROCm 6.4 has neither header."""
    root = git_repo({"csrc/unit.cu": TILES})
    fail = failure("cuda_std", "csrc/unit.cu", "cuda/cmath", "fatal error: 'cuda/cmath' file not found")
    prop = propose(root, fail)
    assert "struct maximum<void>" in prop.diff and "ceil_div(T a, U b)" in prop.diff
    assert "class atomic_ref" not in prop.diff  # only the shims the unit needs
    outcome = validate(root, image_toolchains(root, rocm_image, "gfx942"), prop, fail)
    assert outcome.kept, outcome.reason
    assert all(c.ok for c in outcome.checks), [c.detail for c in outcome.checks]
    assert not propose_for(fail, Workspace(root=root)).proposals
