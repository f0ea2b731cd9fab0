"""bf16/fp16/fp8 type names: the CUDA name becomes a typedef of the HIP type under USE_ROCM.

bf16 maps to `__hip_bfloat16` (never the rocBLAS `hip_bfloat16` the compiler suggests). The fp8 scalars
keep NVIDIA's OCP encoding through the compat header's software shim (fp8_ocp): gfx942 (MI300) has only
the fnuz encoding, which would change values and bytes; the fp8 vector types are declined.
"""

from __future__ import annotations

import re

from agent.proposers.rules.base import Decline, Workspace, make_proposal, register
from agent.proposers.rules.cpp import branches, guard_blocks, include_of, line_platforms
from agent.proposers.rules.fp8_ocp import SCALARS, fp8_proposal
from agent.proposers.rules.guard import guard_includes
from agent.proposers.rules.headers import block_replacements, target_file
from tools.records import Failure, Proposal

BF16 = {
    "__nv_bfloat16": "__hip_bfloat16",
    "nv_bfloat16": "__hip_bfloat16",
    "__nv_bfloat162": "__hip_bfloat162",
    "nv_bfloat162": "__hip_bfloat162",
}
FP16 = {"__nv_half": "__half", "__nv_half2": "__half2", "nv_half": "__half", "nv_half2": "__half2"}
# CUDA fp8 name -> (OCP HIP type, FNUZ HIP type)
FP8 = {
    "__nv_fp8_e4m3": ("__hip_fp8_e4m3", "__hip_fp8_e4m3_fnuz"),
    "__nv_fp8_e5m2": ("__hip_fp8_e5m2", "__hip_fp8_e5m2_fnuz"),
    "__nv_fp8x2_e4m3": ("__hip_fp8x2_e4m3", "__hip_fp8x2_e4m3_fnuz"),
    "__nv_fp8x2_e5m2": ("__hip_fp8x2_e5m2", "__hip_fp8x2_e5m2_fnuz"),
    "__nv_fp8x4_e4m3": ("__hip_fp8x4_e4m3", "__hip_fp8x4_e4m3_fnuz"),
    "__nv_fp8x4_e5m2": ("__hip_fp8x4_e5m2", "__hip_fp8x4_e5m2_fnuz"),
    "__nv_fp8_storage_t": ("__hip_fp8_storage_t", "__hip_fp8_storage_t"),
}
# family -> (CUDA header, HIP header)
HEADERS = {
    "bf16": ("cuda_bf16.h", "hip/hip_bf16.h"),
    "fp16": ("cuda_fp16.h", "hip/hip_fp16.h"),
    "fp8": ("cuda_fp8.h", "hip/hip_fp8.h"),
}


def family_of(symbol: str) -> str | None:
    for name, table in (("bf16", BF16), ("fp16", FP16), ("fp8", FP8)):
        if symbol in table:
            return name
    return None


def typedef_lines(family: str, names: list[str]) -> list[str]:
    """The ROCm-side typedefs for the CUDA bf16/fp16 type names a file uses."""
    table = BF16 if family == "bf16" else FP16
    return [f"typedef {table[n]} {n};" for n in names]


def _declared(text: str, name: str) -> bool:
    return (
        re.search(rf"(typedef\s[^;]*\b{re.escape(name)}\s*;|using\s+{re.escape(name)}\s*=)", text) is not None
    )


def _insert(text: str, family: str, lines_new: list[str]) -> str:
    """Put the typedefs after the HIP header in an existing ROCm branch, or guard the CUDA header,
    or add a ROCm-only block after the last include."""
    cuda_h, hip_h = HEADERS[family]
    lines = text.splitlines(keepends=True)
    stacks = branches(lines)
    where = line_platforms(lines)
    new = [ln + "\n" for ln in lines_new]
    for i, ln in enumerate(lines):
        if include_of(ln) == hip_h and where[i] == "rocm":
            return "".join(lines[: i + 1] + new + lines[i + 1 :])
    if any(include_of(ln) == cuda_h and where[i] == "both" for i, ln in enumerate(lines)):
        replacements = block_replacements(text)
        replacements[cuda_h] = [f"#include <{hip_h}>", *lines_new]
        return guard_includes(text, replacements)
    tops = [i for i, ln in enumerate(lines) if include_of(ln) and not stacks[i]]
    blocks = [b for b in guard_blocks(lines) if any(include_of(x) for x in lines[b.start : b.end])]
    at = max([tops[-1] + 1] if tops else [0] + [b.end + 1 for b in blocks])
    block = ["#ifdef USE_ROCM\n", f"#include <{hip_h}>\n", *new, "#endif\n"]
    return "".join(lines[:at] + block + lines[at:])


class TypeNameFixer:
    """CUDA bf16/fp16/fp8 type names -> typedefs of the HIP types under USE_ROCM."""

    family = "types"
    kinds: tuple[str, ...] = ("bf16_type", "fp16_type", "fp8_type")

    def propose(self, failure: Failure, ws: Workspace) -> Proposal | None:
        symbol = (failure.symbol or "").strip()
        if symbol.startswith("__hip_fp8"):
            raise Decline(
                f"{symbol} is unknown to this ROCm's hip_fp8.h (fp8 types need ROCm >= 6.2)", environment=True
            )
        if symbol == "hip_bfloat16":
            raise Decline(
                "hip_bfloat16 is rocBLAS's struct, not the HIP bf16 type: map the CUDA name to "
                "__hip_bfloat16 instead of following the compiler's suggestion"
            )
        family = family_of(symbol)
        if family is None:
            return None
        rel = target_file(failure)
        text = ws.read(rel)
        if text is None or _declared(text, symbol):
            return None
        if family == "fp8":
            if symbol not in SCALARS:
                raise Decline(
                    f"{symbol}: NVIDIA's fp8 vector types have no ROCm form that keeps their OCP encoding on "
                    f"gfx942 (its fp8 is FNUZ: bias 8, +-240, 0x80 NaN; ROCm 6.4's OCP types convert on the host "
                    f"and gfx950 only); the scalar __nv_fp8_e4m3/__nv_fp8_e5m2 get a software shim, vectors need "
                    f"a rewrite over them by hand"
                )
            return fp8_proposal(
                failure, ws, rel, [n for n in SCALARS if re.search(rf"\b{n}\b", text)] or [symbol]
            )
        table = {"bf16": list(BF16), "fp16": list(FP16)}[family]
        used = [n for n in table if re.search(rf"\b{re.escape(n)}\b", text) and not _declared(text, n)]
        names = used if symbol in used else [symbol, *used]
        new = _insert(text, family, typedef_lines(family, names))
        why = (
            f"{rel}: on ROCm, {', '.join(names)} become typedefs of the HIP types "
            f"({'__hip_bfloat16, not the rocBLAS hip_bfloat16' if family == 'bf16' else family}); "
            f"the CUDA code is unchanged."
        )
        return make_proposal(failure, self.family, {rel: (text, new)}, why, ws=ws)


register(TypeNameFixer())
