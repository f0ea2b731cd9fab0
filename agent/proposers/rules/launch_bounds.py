"""`__launch_bounds__(threads, min_blocks, max_blocks_per_cluster)`: CUDA 12's third argument on ROCm.

HIP's `__launch_bounds__` takes one or two arguments; with a third its selector expands to garbage
("expected unqualified-id"). ROCm has no thread-block clusters, so the third argument has nothing to bound:
the compat header redefines the macro under `#ifdef USE_ROCM` to drop it and keep HIP's own one- and
two-argument forms (`launch_bounds_impl0/1` of amd_hip_runtime.h), so a 3-argument kernel gets exactly the
attributes of its 2-argument form. Nothing changes on CUDA.
"""

from __future__ import annotations

import re

from agent.proposers.rules.base import Workspace, make_proposal, register
from agent.proposers.rules.compat_header import add_block, compat_text
from agent.proposers.rules.headers import target_file
from tools.records import Failure, Proposal

_THREE = re.compile(r"__launch_bounds__\s*\(\s*[^,()]+(?:\([^()]*\))?[^,()]*,[^,()]+,[^,()]+\)")
MARK = "// __launch_bounds__ with three arguments on ROCm"
BLOCK = f"""\
{MARK}: HIP's macro takes one or two; ROCm has no thread-block clusters,
// so CUDA's third argument (max blocks per cluster) is dropped and HIP's own forms are kept.
#ifdef USE_ROCM
#include <hip/hip_runtime.h>
#undef __launch_bounds__
#define rocm_compat_launch_bounds_pick(_1, _2, _3, impl, ...) impl
#define rocm_compat_launch_bounds3(threads, min_blocks, cluster_blocks) launch_bounds_impl1(threads, min_blocks)
#define __launch_bounds__(...)                                                                        \\
  rocm_compat_launch_bounds_pick(__VA_ARGS__, rocm_compat_launch_bounds3, launch_bounds_impl1, \\
                                 launch_bounds_impl0, )(__VA_ARGS__)
#endif
"""


class LaunchBounds3Fixer:
    """A 3-argument `__launch_bounds__` hipcc cannot expand -> the compat header drops the cluster argument."""

    family = "launch_bounds"
    kinds: tuple[str, ...] = ("compile_error", "launch_bounds_smem")

    def propose(self, failure: Failure, ws: Workspace) -> Proposal | None:
        rel = target_file(failure)
        text = ws.read(rel)
        if text is None or not failure.line or "expected" not in (failure.message or ""):
            return None
        lines = text.splitlines()
        if failure.line > len(lines) or not _THREE.search(lines[failure.line - 1]):
            return None
        edits = add_block(ws, rel, None if MARK in compat_text(ws, rel) else BLOCK)
        if not edits:
            return None
        return make_proposal(
            failure,
            self.family,
            edits,
            (
                f"{rel}: __launch_bounds__ with CUDA 12's third argument (max blocks per cluster), which HIP's macro "
                f"cannot take; ROCm has no thread-block clusters, so the compat header redefines the macro under "
                f"`#ifdef USE_ROCM` to drop it (threads and min blocks keep HIP's meaning). Nothing changes on CUDA."
            ),
            ws=ws,
        )


register(LaunchBounds3Fixer())
