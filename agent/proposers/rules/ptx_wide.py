"""Register packing and address conversion PTX, for the straight-line translation (`ptx_translate`).

PTX ISA facts: `mov.b32 d, {a, b}` / `mov.b64 d, {a, b}` pack two 16-/32-bit elements into one register,
the first element in the low bits, and `mov.b{32,64} {a, b}, d` unpacks the same way ("mov", vector to
scalar). `cvta.to.global.u64 d, a` turns a generic address into a global one and `cvta.global.u64 d, a`
back: on AMDGPU a global address and its flat (generic) address are the same 64-bit value (the cast
between address spaces 1 and 0 is a no-op), so both become a copy. `cvta` to or from `.shared`/`.local`
is not a copy on AMDGPU (LDS addresses are 32-bit offsets) and stays untranslated, as does the 32-bit
`.u32` form.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent.proposers.rules.ptx_translate import Block

# Element width of a two-element pack: (operand constraint, register C++ type, whole C++ type, shift).
_PACK = {"b32": ("h", "uint16_t", "uint32_t", 16), "b64": ("r", "uint32_t", "uint64_t", 32)}
_WHOLE = {"uint32_t": "r", "uint64_t": "l"}


def _element(block: Block, tok: str, letter: str, ctype: str, out: bool) -> str | None:
    """An operand of constraint `letter` (an output when `out`) or a declared register of type `ctype`."""
    tok = tok.strip()
    if re.fullmatch(r"%\d+", tok):
        n = int(tok[1:])
        ok = n < len(block.ops) and block.ops[n][0] == letter and (n < block.n_out) == out
        return block.ops[n][1] if ok else None
    return f"rocport_{tok}" if block.regs.get(tok) == ctype else None


def _pair(arg: str) -> list[str]:
    arg = arg.strip()
    return [h.strip() for h in arg[1:-1].split(",")] if arg.startswith("{") and arg.endswith("}") else []


def wide_instr(block: Block, op: str, args: list[str]) -> str | None:
    """`mov.b{32,64}` packing/unpacking two elements or a global `cvta` as C++ (one line per statement), or None."""
    if op in ("cvta.to.global.u64", "cvta.global.u64") and len(args) == 2:
        d = _element(block, args[0], "l", "uint64_t", True)
        a = _element(block, args[1], "l", "uint64_t", False)
        return f"{d} = uint64_t({a});" if d and a else None
    kind = op.removeprefix("mov.")
    if not op.startswith("mov.") or kind not in _PACK or len(args) != 2:
        return None
    letter, part, whole, shift = _PACK[kind]
    packed, unpacked = _pair(args[1]), _pair(args[0])
    if len(packed) == 2 and not unpacked:
        d = _element(block, args[0], _WHOLE[whole], whole, True)
        lo, hi = (_element(block, h, letter, part, False) for h in packed)
        return f"{d} = {whole}({lo}) | ({whole}({hi}) << {shift});" if d and lo and hi else None
    if len(unpacked) == 2 and not packed:
        lo, hi = (_element(block, h, letter, part, True) for h in unpacked)
        v = _element(block, args[1], _WHOLE[whole], whole, False)
        return f"{lo} = {part}({v});\n{hi} = {part}({whole}({v}) >> {shift});" if lo and hi and v else None
    return None
