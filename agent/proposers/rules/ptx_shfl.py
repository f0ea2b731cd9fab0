"""Warp shuffles in inline PTX (`shfl.sync.<mode>.b32`), for the straight-line translation (`ptx_translate`).

`shfl.sync.<mode>.b32 d, a, b, c, membermask` reads `a` from lane j of the 32-lane warp, where j is
`lane ^ b` (bfly), `lane + b` (down), `lane - b` (up) or the segment's start plus `b` (idx), and c packs
the segment mask (bits 12:8) and the clamp (bits 4:0). The CUDA intrinsics with a width w (a power of
two up to 32) emit c = ((32 - w) << 8) | 0x1f (up: (32 - w) << 8); with that c, a j past the segment's
end (up: before its start) gives the lane its own `a`. HIP's `__shfl_xor/__shfl_down/__shfl_up/__shfl`
with width w define exactly that for each w-lane segment of the 64-lane wave (amd_warp_functions.h), so
the 32-lane meaning holds on wave64. One difference: a bfly `b` of 32 or more, which PTX clamps to the
own lane, would reach the other half of a wave64, so a `b` that is not an immediate under 32 is passed
as `b < 32 ? b : 0` (xor 0 is the own lane). Only the full member mask (0xffffffff), an immediate c of
that form, and no predicate output (`d|p`) are translated; `a`/`d` may be `"r"` or `"f"` operands (the
bits move unchanged, as in PTX).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent.proposers.rules.ptx_translate import Block

CALLS = {"bfly": "__shfl_xor", "down": "__shfl_down", "up": "__shfl_up", "idx": "__shfl"}
_INT = re.compile(r"0[xX][0-9a-fA-F]+|\d+")
WIDTHS = (1, 2, 4, 8, 16, 32)


def _immediate(block: Block, tok: str) -> int | None:
    """The integer value of an immediate, or of an operand whose expression is an integer literal."""
    tok = tok.strip()
    if re.fullmatch(r"%\d+", tok) and int(tok[1:]) < len(block.ops):
        tok = block.ops[int(tok[1:])][1].strip().rstrip("uU")
    return int(tok, 0) if _INT.fullmatch(tok) else None


def _width(mode: str, c: int) -> int | None:
    """The segment width w that the CUDA intrinsics encode as `c` for `mode`, or None."""
    for w in WIDTHS:
        if c == ((32 - w) << 8) | (0 if mode == "up" else 0x1F):
            return w
    return None


def _register(block: Block, tok: str, out: bool) -> tuple[str, str] | None:
    """(constraint class 'r' or 'f', C++ expression) of a 32-bit `%n` operand, or None."""
    tok = tok.strip()
    if not re.fullmatch(r"%\d+", tok):
        return None
    n = int(tok[1:])
    if n >= len(block.ops) or (n < block.n_out) != out or block.ops[n][0] not in "rf":
        return None
    return block.ops[n][0], block.ops[n][1]


def shfl_instr(block: Block, op: str, args: list[str]) -> str | None:
    """`shfl.sync.<mode>.b32 d, a, b, c, membermask` as one HIP shuffle, or None."""
    parts = op.split(".")
    if len(parts) != 4 or parts[:2] != ["shfl", "sync"] or parts[2] not in CALLS or parts[3] != "b32":
        return None
    if len(args) != 5 or "|" in args[0]:
        return None
    d, a = _register(block, args[0], True), _register(block, args[1], False)
    c, mask = _immediate(block, args[3]), _immediate(block, args[4])
    b = block.value(args[2])
    w = _width(parts[2], c) if c is not None else None
    if not (d and a and b and w) or mask != 0xFFFFFFFF:
        return None
    if parts[2] == "bfly":
        imm = _immediate(block, args[2])
        if imm is not None and imm >= 32:
            return None
        b = b if imm is not None else f"uint32_t({b}) < 32u ? int({b}) : 0"
    ctype = "uint32_t" if a[0] == "r" else "float"
    call = f"{CALLS[parts[2]]}({ctype}({a[1]}), {b}, {w})"
    if d[0] != a[0]:
        call = f"{'__uint_as_float' if d[0] == 'f' else '__float_as_uint'}({call})"
    return f"{d[1]} = {call};"
