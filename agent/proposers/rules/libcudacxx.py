"""libcu++ on ROCm: `cuda/atomic` and `cuda/std/atomic` get a shim on clang's `__hip_atomic_*`;
`cuda/functional` (cuda::maximum/minimum) and `cuda/cmath` (cuda::ceil_div) get small shims too.

ROCm 6.4 ships no libhipcxx, so `cuda::atomic<T, cuda::thread_scope_device>` has no header. The clang
builtins take the same memory orders and a scope, so a small class template in the repo's compat header
gives the same operations with the same ordering: thread_scope_system/device/block/thread become
__HIP_MEMORY_SCOPE_SYSTEM/AGENT/WORKGROUP/SINGLETHREAD. The file includes the compat header under
`#ifdef USE_ROCM` in place of the libcu++ header; nothing changes on CUDA.
"""

from __future__ import annotations

from collections.abc import Callable

from agent.proposers.rules.base import Workspace, make_proposal
from agent.proposers.rules.compat_header import (
    NEW_HEADER,
    compat_location,
    find_compat,
    include_spelling,
    insert_block,
)
from agent.proposers.rules.guard import guard_includes
from agent.proposers.rules.headers import block_replacements, target_file, unguarded
from tools.records import Failure, Proposal

MARK = "// libcu++ atomics on ROCm"
_OPS = """\
  __host__ __device__ T load(memory_order o = memory_order_seq_cst) const { return __hip_atomic_load(p(), o, S); }
  __host__ __device__ void store(T v, memory_order o = memory_order_seq_cst) const {
    __hip_atomic_store(p(), v, o, S);
  }
  __host__ __device__ T exchange(T v, memory_order o = memory_order_seq_cst) const {
    return __hip_atomic_exchange(p(), v, o, S);
  }
  __host__ __device__ bool compare_exchange_strong(T& expected, T desired,
                                                   memory_order o = memory_order_seq_cst) const {
    return __hip_atomic_compare_exchange_strong(p(), &expected, desired, o, rocm_compat_cas_failure(o), S);
  }
  __host__ __device__ bool compare_exchange_weak(T& expected, T desired, memory_order o = memory_order_seq_cst) const {
    return __hip_atomic_compare_exchange_weak(p(), &expected, desired, o, rocm_compat_cas_failure(o), S);
  }
  __host__ __device__ T fetch_add(T v, memory_order o = memory_order_seq_cst) const {
    return __hip_atomic_fetch_add(p(), v, o, S);
  }
  __host__ __device__ T fetch_sub(T v, memory_order o = memory_order_seq_cst) const {
    return __hip_atomic_fetch_add(p(), T(0) - v, o, S);
  }
  __host__ __device__ T fetch_and(T v, memory_order o = memory_order_seq_cst) const {
    return __hip_atomic_fetch_and(p(), v, o, S);
  }
  __host__ __device__ T fetch_or(T v, memory_order o = memory_order_seq_cst) const {
    return __hip_atomic_fetch_or(p(), v, o, S);
  }
  __host__ __device__ T fetch_xor(T v, memory_order o = memory_order_seq_cst) const {
    return __hip_atomic_fetch_xor(p(), v, o, S);
  }
  __host__ __device__ T fetch_min(T v, memory_order o = memory_order_seq_cst) const {
    return __hip_atomic_fetch_min(p(), v, o, S);
  }
  __host__ __device__ T fetch_max(T v, memory_order o = memory_order_seq_cst) const {
    return __hip_atomic_fetch_max(p(), v, o, S);
  }
  __host__ __device__ operator T() const { return load(); }
  __host__ __device__ T operator++() const { return fetch_add(T(1)) + T(1); }
  __host__ __device__ T operator++(int) const { return fetch_add(T(1)); }
  __host__ __device__ T operator--() const { return fetch_sub(T(1)) - T(1); }
  __host__ __device__ T operator--(int) const { return fetch_sub(T(1)); }
  __host__ __device__ T operator+=(T v) const { return fetch_add(v) + v; }
  __host__ __device__ T operator-=(T v) const { return fetch_sub(v) - v; }
"""
SHIM = f"""\
{MARK} (cuda::atomic, cuda::atomic_ref): ROCm 6.4 has no libhipcxx. clang's
// __hip_atomic_* builtins take the same memory orders plus a scope: the system, device, block and thread
// scopes become the HIP scopes SYSTEM, AGENT (one GPU), WORKGROUP and SINGLETHREAD.
// cuda::std::atomic is the system-scope atomic.
#ifdef USE_ROCM
#include <hip/hip_runtime.h>
namespace cuda {{
enum thread_scope {{
  thread_scope_system = __HIP_MEMORY_SCOPE_SYSTEM,
  thread_scope_device = __HIP_MEMORY_SCOPE_AGENT,
  thread_scope_block = __HIP_MEMORY_SCOPE_WORKGROUP,
  thread_scope_thread = __HIP_MEMORY_SCOPE_SINGLETHREAD
}};
namespace std {{
enum memory_order {{
  memory_order_relaxed = __ATOMIC_RELAXED,
  memory_order_consume = __ATOMIC_CONSUME,
  memory_order_acquire = __ATOMIC_ACQUIRE,
  memory_order_release = __ATOMIC_RELEASE,
  memory_order_acq_rel = __ATOMIC_ACQ_REL,
  memory_order_seq_cst = __ATOMIC_SEQ_CST
}};
}}  // namespace std
using cuda::std::memory_order;
using cuda::std::memory_order_acq_rel;
using cuda::std::memory_order_acquire;
using cuda::std::memory_order_consume;
using cuda::std::memory_order_relaxed;
using cuda::std::memory_order_release;
using cuda::std::memory_order_seq_cst;
// A compare-exchange given one order fails with the strongest order a load may have.
__host__ __device__ constexpr memory_order rocm_compat_cas_failure(memory_order o) {{
  return o == memory_order_acq_rel ? memory_order_acquire : o == memory_order_release ? memory_order_relaxed : o;
}}
template <typename T, thread_scope S = thread_scope_system>
class atomic_ref {{
 public:
  __host__ __device__ explicit atomic_ref(T& v) : p_(&v) {{}}
  __host__ __device__ T operator=(T v) const {{
    store(v);
    return v;
  }}
{_OPS}
 private:
  __host__ __device__ T* p() const {{ return p_; }}
  T* p_;
}};
template <typename T, thread_scope S = thread_scope_system>
class atomic {{
 public:
  atomic() = default;
  __host__ __device__ constexpr atomic(T v) : v_(v) {{}}
  atomic(const atomic&) = delete;
  atomic& operator=(const atomic&) = delete;
  __host__ __device__ T operator=(T v) {{
    store(v);
    return v;
  }}
{_OPS}
 private:
  __host__ __device__ T* p() const {{ return const_cast<T*>(&v_); }}
  T v_;
}};
// Fences: relaxed orders nothing; any other order fences at the scope's strongest ordering.
__device__ inline void atomic_thread_fence(memory_order o, thread_scope s = thread_scope_system) {{
  if (o == memory_order_relaxed) return;
  if (s == thread_scope_block) {{
    __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, "workgroup");
  }} else if (s == thread_scope_device) {{
    __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, "agent");
  }} else {{
    __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, "");
  }}
}}
namespace std {{
template <typename T>
using atomic = cuda::atomic<T, thread_scope_system>;
template <typename T>
using atomic_ref = cuda::atomic_ref<T, thread_scope_system>;
using cuda::atomic_thread_fence;
}}  // namespace std
}}  // namespace cuda
#endif
"""


FUNCTIONAL_MARK = "// libcu++ cuda::maximum/cuda::minimum on ROCm"
FUNCTIONAL = f"""\
{FUNCTIONAL_MARK} (cuda/functional): CCCL's replacements for cub::Max/cub::Min,
// which ROCm 6.4 has no header for; the same comparisons, ties keep the first operand.
#ifdef USE_ROCM
#include <hip/hip_runtime.h>
namespace cuda {{
template <typename T = void>
struct maximum {{
  __host__ __device__ constexpr T operator()(const T& a, const T& b) const {{ return a < b ? b : a; }}
}};
template <>
struct maximum<void> {{
  template <typename T, typename U>
  __host__ __device__ constexpr auto operator()(const T& a, const U& b) const {{ return a < b ? b : a; }}
}};
template <typename T = void>
struct minimum {{
  __host__ __device__ constexpr T operator()(const T& a, const T& b) const {{ return b < a ? b : a; }}
}};
template <>
struct minimum<void> {{
  template <typename T, typename U>
  __host__ __device__ constexpr auto operator()(const T& a, const U& b) const {{ return b < a ? b : a; }}
}};
}}  // namespace cuda
#endif
"""
CMATH_MARK = "// libcu++ cuda::ceil_div on ROCm"
CMATH = f"""\
{CMATH_MARK} (cuda/cmath): integer division rounding up, and rounding to a
// multiple, without the overflow of (a + b - 1) / b; ROCm 6.4 has no libcu++ header for them.
#ifdef USE_ROCM
#include <hip/hip_runtime.h>
namespace cuda {{
template <typename T, typename U>
__host__ __device__ constexpr auto ceil_div(T a, U b) -> decltype(a / b) {{
  return a / b + (a % b != 0);
}}
template <typename T, typename U>
__host__ __device__ constexpr auto round_up(T a, U b) -> decltype(a / b) {{
  return ceil_div(a, b) * b;
}}
template <typename T, typename U>
__host__ __device__ constexpr auto round_down(T a, U b) -> decltype(a / b) {{
  return a / b * b;
}}
}}  // namespace cuda
#endif
"""
# libcu++ header -> (the shim's mark in the compat header, the shim)
SHIMS = {
    "cuda/atomic": (MARK, SHIM),
    "cuda/std/atomic": (MARK, SHIM),
    "cuda/functional": (FUNCTIONAL_MARK, FUNCTIONAL),
    "cuda/cmath": (CMATH_MARK, CMATH),
}


def includers(ws: Workspace, failure: Failure) -> dict[str, list[str]]:
    """Every file of the failing unit's include closure that includes a shimmed libcu++ header where both
    toolchains compile it (a unit often reaches them through several of its own headers), with those
    headers."""
    from agent.patch.units import include_graph

    graph = include_graph(ws.root)
    todo = [u for u in [failure.facts.get("unit"), target_file(failure)] if u]
    seen: set[str] = set()
    while todo:
        cur = todo.pop()
        if cur not in seen:
            seen.add(cur)
            todo += sorted(graph.get(cur, ()))
    found = {rel: [h for h in SHIMS if unguarded(ws.read(rel) or "", h)] for rel in sorted(seen)}
    return {rel: hs for rel, hs in found.items() if hs}


def shim_proposal(
    failure: Failure, ws: Workspace, header: str, family: str, extra: Callable[[str], dict] | None = None
) -> Proposal | None:
    """Each file that includes a shimmed libcu++ header includes the compat header instead on ROCm, and the
    compat header (the repo's own, else a new one) gets each shim those files need, once. `extra` gives a
    file's other include replacements of the same block (cub's), so one edit guards the whole block."""
    files = includers(ws, failure)
    if not files:
        return None
    first = next(iter(files))
    compat = find_compat(ws, first) or compat_location(ws, first)
    old = ws.read(compat)
    needed = {SHIMS[h] for hs in files.values() for h in hs}
    blocks = "\n".join(text for mark, text in sorted(needed) if mark not in (old or ""))
    edits: dict[str, tuple[str | None, str]] = {}
    if blocks:
        edits[compat] = (
            old,
            insert_block(old, blocks) if old is not None else NEW_HEADER.format(body=blocks),
        )
    for rel in files:
        text = ws.read(rel) or ""
        mine = [f'#include "{include_spelling(compat, rel)}"']
        others = {**block_replacements(text), **(extra(text) if extra else {})}
        edits[rel] = (text, guard_includes(text, {**others, **dict.fromkeys(SHIMS, mine)}))
    headers = sorted({h for hs in files.values() for h in hs})
    return make_proposal(
        failure,
        family,
        edits,
        (
            f"{', '.join(files)}: {', '.join(headers)} (libcu++) have no ROCm 6.4 header (no libhipcxx); on "
            f"ROCm they include {compat}, whose shims implement what they use: cuda::atomic/atomic_ref on "
            f"clang's __hip_atomic_* builtins with the same memory orders and scopes (device -> agent, "
            f"system -> system, block -> workgroup), cuda::maximum/minimum, cuda::ceil_div; the CUDA branch "
            f"keeps the libcu++ includes."
        ),
        ws=ws,
    )
