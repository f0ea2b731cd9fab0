"""How wide the mask passed to a `__*_sync` warp intrinsic is, as the ROCm build sees it.

HIP's `__shfl_xor_sync`, `__ballot_sync`, ... (ROCm 6.2+) static_assert a 64-bit mask, so a 32-bit
literal (`0xffffffff`, `~0u`, `unsigned(-1)`) or a macro the ROCm build defines to one is a certain
compile error; a 64-bit one (vLLM's `FINAL_MASK` under USE_ROCM) is the project's ROCm code working.
"""

from __future__ import annotations

import re

from tools.cpp.build_configs import rocm_config
from tools.cpp.conditions import evaluate
from tools.cpp.preprocessor import Regions
from tools.regex_memo import compile_pattern

_LITERAL = compile_pattern(r"(0[xX][0-9a-fA-F]+|\d+)([uUlL]*)$")
_WIDE = compile_pattern(
    r"\b(?:u?int64_t|unsigned\s+long\s+long|long\s+long|size_t|uint64|ull|ULL)\b|ull\b|ULL\b"
)
_NARROW_CAST = compile_pattern(
    r"^(?:unsigned|uint32_t|unsigned\s+int|int)\s*\(\s*-\s*1\s*\)$|^~0[uU]?$|^-1[uU]?$"
)
HIP_LACKS = frozenset(
    {
        "__match_any_sync",
        "__match_all_sync",
        "__reduce_add_sync",
        "__reduce_min_sync",
        "__reduce_max_sync",
        "__reduce_and_sync",
        "__reduce_or_sync",
        "__reduce_xor_sync",
        "__uni_sync",
    }
)
"""Warp intrinsics with no HIP counterpart at all."""


def call_arguments(masked: str, open_paren: int, limit: int = 600) -> list[str]:
    """The top-level arguments of the call whose '(' is at `open_paren`, stripped."""
    depth, start, out = 0, open_paren + 1, []
    for i in range(open_paren, min(len(masked), open_paren + limit)):
        ch = masked[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                out.append(masked[start:i].strip())
                return out
        elif ch == "," and depth == 1:
            out.append(masked[start:i].strip())
            start = i + 1
    out.append(masked[start : min(len(masked), open_paren + limit)].strip())
    return out


def first_argument(masked: str, open_paren: int) -> str:
    """The text of a call's first argument."""
    return call_arguments(masked, open_paren, limit=400)[0]


def mask_bits(argument: str, regions: Regions) -> int | None:
    """32 or 64 when the ROCm build's mask width is known, else None."""
    text = " ".join(argument.split())
    if _NARROW_CAST.match(text):
        return 32
    if _WIDE.search(text):
        return 64
    literal = _LITERAL.match(text)
    if literal:
        return 64 if "ll" in literal.group(2).lower() or int(literal.group(1), 0) > 0xFFFFFFFF else 32
    if re.fullmatch(r"[A-Za-z_]\w*", text) and text in regions.exports:
        macro = regions.exports[text][0]
        if macro.defined and macro.value is not None:
            return 64 if macro.value > 0xFFFFFFFF else 32
        value = evaluate(text, rocm_config())
        return None if value is None else (64 if value > 0xFFFFFFFF else 32)
    return None
