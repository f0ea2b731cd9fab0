"""cub -> hipcub with a namespace alias; cuda/std host-compatible traits -> the standard headers."""

from __future__ import annotations

import re

from agent.proposers.rules.base import Decline, Workspace, register
from agent.proposers.rules.cpp import include_of
from agent.proposers.rules.headers import guard_include_block, including_file
from agent.proposers.rules.libcudacxx import SHIMS, shim_proposal
from tools.records import Failure, Proposal

CUB_ROCM = ["#include <hipcub/hipcub.hpp>", "namespace cub = hipcub;"]
_CUB_MEMBER = re.compile(r"no (?:member|type|template) named '(\w+)' in namespace '(?:cub|hipcub)'")
# CUB names hipCUB (ROCm 6.4) lacks for a known reason that no rename fixes.
_LOOKBACK = (
    "hipCUB (ROCm 6.4) has none of CUB's single-pass scan operators (ScanTileState, ScanTileStatus, "
    "TilePrefixCallbackOp, BlockScanRunningPrefixOp, ReduceByKeyScanTileState: the decoupled look-back). "
    "rocPRIM's counterpart, rocprim::detail::lookback_scan_state with lookback_scan_prefix_op, is internal "
    "(detail namespace, changes between ROCm releases) and has another interface "
    "(create/get_storage_size on the host, initialize_prefix/set_partial/set_complete/get on the "
    "device, no WaitForValid), so a kernel built on it needs a redesign, e.g. around "
    "hipcub::DeviceScan; not a mechanical rule"
)
NO_HIPCUB = dict.fromkeys(
    (
        "ScanTileState",
        "ScanTileStatus",
        "TilePrefixCallbackOp",
        "BlockScanRunningPrefixOp",
        "ReduceByKeyScanTileState",
    ),
    _LOOKBACK,
)

# cuda/std headers whose contents are host-and-device-compatible standard templates.
STD_HEADERS = {
    "cuda/std/type_traits": "type_traits",
    "cuda/std/limits": "limits",
    "cuda/std/utility": "utility",
    "cuda/std/cstdint": "cstdint",
    "cuda/std/cstddef": "cstddef",
    "cuda/std/tuple": "tuple",
    "cuda/std/array": "array",
    "cuda/std/functional": "functional",
    "cuda/std/climits": "climits",
    "cuda/std/ratio": "ratio",
    "cuda/std/bit": "bit",
    "cuda/std/cmath": "cmath",
    "cuda/std/cfloat": "cfloat",
    "cuda/std/cassert": "cassert",
    "cuda/std/initializer_list": "initializer_list",
}
# Lets `cuda::std::is_same_v` resolve to `std::is_same_v` on ROCm without touching the CUDA code; a
# namespace (not an alias) so the libcu++ atomic shim can add cuda::std::atomic beside it.
STD_ALIAS = "namespace cuda { namespace std { using namespace ::std; } }"
NEEDS_LIBHIPCXX = (
    "barrier",
    "latch",
    "semaphore",
    "pipeline",
    "annotated_ptr",
    "memory_resource",
    "chrono",
    "complex",
    "span",
    "mdspan",
)


def _cub_headers(text: str) -> dict[str, list[str]]:
    return {h: CUB_ROCM for h in (include_of(ln) for ln in text.splitlines()) if h and h.startswith("cub/")}


class CubFixer:
    """cub includes -> hipcub + `namespace cub = hipcub;` under USE_ROCM."""

    family = "cub"
    kinds: tuple[str, ...] = ("cub",)

    def propose(self, failure: Failure, ws: Workspace) -> Proposal | None:
        member = _CUB_MEMBER.search(failure.message or "")
        if member and member.group(1) in NO_HIPCUB:
            raise Decline(f"cub::{member.group(1)}: {NO_HIPCUB[member.group(1)]}")
        if member:
            raise Decline(
                f"cub::{member.group(1)} is missing from this CUB/hipCUB version (CCCL renamed or "
                f"removed it, e.g. cub::Max -> cuda::maximum): which replacement is right depends on "
                f"both toolchains' versions; not a mechanical rule"
            )
        header = (failure.symbol or "").strip()
        if header.startswith(("hipcub/", "rocprim/")):
            raise Decline(
                f"{header} is missing from the ROCm image (install hipcub/rocprim)", environment=True
            )
        if not header.startswith("cub/"):
            return None
        rel = including_file(ws, failure, header)
        if rel and any(include_of(ln) in SHIMS for ln in (ws.read(rel) or "").splitlines()):
            # the block also includes libcu++ headers (cuda/functional for cuda::maximum): one edit for both
            return shim_proposal(failure, ws, header, self.family, extra=_cub_headers)
        return guard_include_block(
            ws,
            failure,
            header,
            self.family,
            "on ROCm include hipCUB and alias `namespace cub = hipcub;` so the existing "
            "cub:: code compiles unchanged; the CUDA branch keeps the original include.",
        )


class CudaStdFixer:
    """Host-compatible cuda/std headers -> <type_traits> & co plus a cuda::std alias under USE_ROCM."""

    family = "cuda_std"
    kinds: tuple[str, ...] = ("cuda_std",)

    def propose(self, failure: Failure, ws: Workspace) -> Proposal | None:
        header = (failure.symbol or "").strip()
        if not header.startswith("cuda/"):
            return None
        if header in SHIMS:
            return shim_proposal(failure, ws, header, "libcudacxx_atomic", extra=_cub_headers)
        if header not in STD_HEADERS:
            leaf = header.rsplit("/", 1)[-1]
            why = (
                "needs libhipcxx, which ROCm 6.4 does not ship (barriers, pipelines, semaphores and the other "
                "libcu++ facilities beyond cuda::atomic are not plain std templates)"
                if leaf in NEEDS_LIBHIPCXX or not header.startswith("cuda/std/")
                else "has no known std mapping"
            )
            raise Decline(f"{header} {why}; not a mechanical rule")
        return guard_include_block(
            ws,
            failure,
            header,
            self.family,
            "on ROCm use the standard headers and alias `cuda::std` to `::std` "
            "(host-compatible traits only); the CUDA branch keeps libcu++.",
        )


register(CubFixer())
register(CudaStdFixer())
