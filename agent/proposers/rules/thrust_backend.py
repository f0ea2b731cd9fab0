"""`thrust::cuda::par` & co on ROCm: rocThrust's device backend is `thrust::hip`, with the same policies.

CUDA code picks Thrust's CUDA backend by name (`thrust::cuda::par.on(stream)`, `thrust::cuda::par_nosync`);
rocThrust serves the same headers for hipcc but names its backend `thrust::hip`. The compat header aliases
the namespace under `#ifdef USE_ROCM`, so the calls run on the HIP backend on the stream they name. Nothing
changes on CUDA.
"""

from __future__ import annotations

import re

from agent.proposers.rules.base import Workspace, make_proposal, register
from agent.proposers.rules.compat_header import add_block, compat_view
from tools.records import Failure, Proposal

_MISSING = re.compile(r"no (?:member|namespace) named 'cuda' in namespace 'thrust'")
MARK = "// thrust::cuda on ROCm"
BLOCK = f"""\
{MARK}: rocThrust's device backend is thrust::hip, with the same execution policies
// (par, par_nosync, .on(stream)).
#ifdef USE_ROCM
#include <thrust/execution_policy.h>
namespace thrust {{
namespace cuda = ::thrust::hip;
}}  // namespace thrust
#endif
"""


class ThrustBackendFixer:
    """`thrust::cuda` unknown on ROCm -> a namespace alias of rocThrust's `thrust::hip` in the compat header."""

    family = "thrust_backend"
    kinds: tuple[str, ...] = ("compile_error", "cuda_std", "cuda_api", "stream_api")

    def propose(self, failure: Failure, ws: Workspace) -> Proposal | None:
        if not _MISSING.search(failure.message or ""):
            return None
        view = compat_view(ws, failure)
        if view is None:
            return None
        rel, _, have = view
        edits = add_block(ws, rel, None if MARK in have else BLOCK)
        if not edits:
            return None
        return make_proposal(
            failure,
            self.family,
            edits,
            (
                f"{rel}: thrust::cuda (Thrust's CUDA backend) does not exist in rocThrust, whose device backend is "
                f"thrust::hip with the same policies; the compat header aliases it under `#ifdef USE_ROCM`, so "
                f"thrust::cuda::par.on(stream) runs on the HIP backend on that stream. Nothing changes on CUDA."
            ),
            ws=ws,
        )


register(ThrustBackendFixer())
