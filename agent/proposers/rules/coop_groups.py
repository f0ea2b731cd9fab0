"""Cooperative-groups gaps on ROCm: `cg::reduce` and its operators become a warp (tile) reduction.

HIP's cooperative groups have tiles and their shuffles but no `reduce`, `plus`, `less` or `greater`.
The compat header gets them under `#ifdef USE_ROCM`: a butterfly of `shfl_xor` over the tile, which
leaves the result in every lane as CUDA's `cg::reduce` does. Nothing changes on CUDA.
"""

from __future__ import annotations

import re

from agent.proposers.rules.base import Decline, Workspace, make_proposal, register
from agent.proposers.rules.compat_header import add_block, compat_view
from tools.records import Failure, Proposal

_MISSING = re.compile(
    r"no (?:member|template) named '(reduce|plus|less|greater)' in namespace '(?:cooperative_groups|cg)'"
)
_TILE_VOTE = re.compile(r"no member named '(any|all|ballot|match_any|match_all)' in 'cooperative_groups::")
MARK = "// cooperative_groups::reduce on ROCm"
BLOCK = f"""\
{MARK}: HIP's cooperative groups have no reduce or reduction operators. A tile
// reduction is a butterfly of shfl_xor over the tile; every lane ends with the result, as on CUDA.
#ifdef USE_ROCM
#include <hip/hip_cooperative_groups.h>
namespace cooperative_groups {{
template <typename T>
struct plus {{
  __device__ T operator()(const T& a, const T& b) const {{ return a + b; }}
}};
template <typename T>
struct less {{
  __device__ T operator()(const T& a, const T& b) const {{ return b < a ? b : a; }}
}};
template <typename T>
struct greater {{
  __device__ T operator()(const T& a, const T& b) const {{ return a < b ? b : a; }}
}};
template <typename Tile, typename T, typename Op>
__device__ T reduce(const Tile& tile, T value, Op op) {{
  for (unsigned offset = tile.size() / 2; offset > 0; offset /= 2) {{
    value = op(value, tile.shfl_xor(value, offset));
  }}
  return value;
}}
}}  // namespace cooperative_groups
#endif
"""


class CoopGroupsReduceFixer:
    """`cg::reduce` / `cg::greater` & co missing on ROCm -> a tile reduction in the compat header."""

    family = "coop_groups"
    kinds: tuple[str, ...] = ("compile_error",)

    def propose(self, failure: Failure, ws: Workspace) -> Proposal | None:
        vote = _TILE_VOTE.search(failure.message or "")
        if vote:
            raise Decline(
                f"{vote.group(1)} on a cooperative-groups tile: HIP 6.4 declares the tile votes (any, all, ballot, "
                f"match_*) only when HIP_ENABLE_WARP_SYNC_BUILTINS is defined before the first HIP header of the "
                f"unit, which a source edit cannot guarantee; add -DHIP_ENABLE_WARP_SYNC_BUILTINS to the ROCm build "
                f"(then HIP's *_sync intrinsics, which want 64-bit masks, are declared too)"
            )
        if not _MISSING.search(failure.message or ""):
            return None
        view = compat_view(ws, failure)
        if view is None:
            return None
        rel, _, have = view
        has_block = MARK in have
        edits = add_block(ws, rel, None if has_block else BLOCK)
        if not edits:
            return None
        return make_proposal(
            failure,
            self.family,
            edits,
            (
                f"{rel}: HIP's cooperative groups lack cg::reduce and its operators; the compat header defines them "
                f"under `#ifdef USE_ROCM` as a shfl_xor butterfly over the tile (result in every lane, as on CUDA). "
                f"Compiled, not run: only running the kernel proves the reduction."
            ),
            ws=ws,
        )


register(CoopGroupsReduceFixer())
