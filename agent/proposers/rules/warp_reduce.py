"""`__reduce_{add,min,max,and,or,xor}_sync` (sm_80 warp reductions) have no HIP intrinsic.

Over a full mask they are a butterfly of `__shfl_xor` over the 32-lane warp, leaving the result in every
lane as on CUDA; the compat header defines them so (width 32: on a 64-lane wavefront each half reduces on
its own, as two CUDA warps would). Only when every call in the file passes a literal full mask and the
kernel is written for 32-lane warps: a partial mask or a warpSize-generic kernel needs a human.
Everything is under `#ifdef USE_ROCM`; nothing changes on CUDA.
"""

from __future__ import annotations

import re

from agent.proposers.rules.base import Decline, Workspace, make_proposal, register
from agent.proposers.rules.compat_header import add_block, compat_text
from agent.proposers.rules.headers import target_file
from agent.proposers.rules.rounding import used_names
from tools.records import Failure, Proposal

OPS = {
    "add": "a + b",
    "min": "b < a ? b : a",
    "max": "a < b ? b : a",
    "and": "a & b",
    "or": "a | b",
    "xor": "a ^ b",
}
NAME = re.compile(r"\b__reduce_(?:" + "|".join(OPS) + r")_sync\b")
_CALL = re.compile(r"\b__reduce_(?:" + "|".join(OPS) + r")_sync\s*\(\s*([^,]*?)\s*,")
_FULL = re.compile(r"(?:0x[fF]{8}|4294967295)[uU]?[lL]{0,2}|~0[uU]?|-1")
MARK = "// CUDA's __reduce_*_sync over a full 32-lane warp"
BUTTERFLY = f"""{MARK}: a shfl_xor butterfly, the result in every lane.
template <typename T, typename Op>
__device__ inline T rocm_compat_reduce32(T v, Op op) {{
  for (int offset = 16; offset > 0; offset /= 2) v = op(v, __shfl_xor(v, offset, 32));
  return v;
}}
"""


def definitions(op: str) -> str:
    types = ("unsigned", "int") if op in ("add", "min", "max") else ("unsigned",)
    return "".join(
        f"__device__ inline {t} __reduce_{op}_sync(unsigned, {t} v) {{\n"
        f"  return rocm_compat_reduce32(v, []({t} a, {t} b) {{ return {OPS[op]}; }});\n}}\n"
        for t in types
    )


class WarpReduceFixer:
    """`__reduce_add_sync(0xffffffff, v)` & co -> a 32-lane shfl_xor butterfly in the compat header."""

    family = "warp_reduce"
    kinds: tuple[str, ...] = ("warp_intrinsic", "compile_error")

    def propose(self, failure: Failure, ws: Workspace) -> Proposal | None:
        if not NAME.fullmatch(failure.symbol or ""):
            return None
        from agent.proposers.rules.warp import lane_model  # warp imports compat_header, as this module does

        rel = target_file(failure)
        text = ws.read(rel)
        if text is None:
            return None
        masks = [m.group(1) for m in _CALL.finditer(text)]
        if not masks or not all(_FULL.fullmatch(m) for m in masks):
            raise Decline(
                f"{rel}: a warp reduction with a mask that is not a literal full mask needs a human"
            )
        if lane_model(text)[0] != "32":
            raise Decline(
                f"{rel}: warpSize-generic kernel: which lanes a CUDA warp reduction spans needs a human"
            )
        have = compat_text(ws, rel)
        ops = [n.split("_")[3] for n in used_names(text, NAME) if f" {n}(unsigned" not in have]
        if not ops:
            return None
        body = "#ifdef USE_ROCM\n#include <hip/hip_runtime.h>\n"
        body += ("" if MARK in have else BUTTERFLY) + "".join(definitions(op) for op in ops) + "#endif\n"
        if MARK in have:
            body = f"{MARK}: more of them.\n" + body
        edits = add_block(ws, rel, body)
        return make_proposal(
            failure,
            self.family,
            edits,
            (
                f"{rel}: {', '.join(f'__reduce_{op}_sync' for op in ops)} (no HIP intrinsic), every call with a "
                f"full mask in a kernel written for 32-lane warps: the compat header defines them under "
                f"`#ifdef USE_ROCM` as a shfl_xor butterfly over 32 lanes (result in every lane, as on CUDA). "
                f"Nothing changes on CUDA. Compiled, not run."
            ),
            ws=ws,
        )


register(WarpReduceFixer())
