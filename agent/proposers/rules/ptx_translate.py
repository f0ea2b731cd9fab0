"""Straight-line inline PTX translated to C++ for the ROCm branch, one PTX statement to one C++ statement.

The subset has an exact C++ meaning (for the float approximations: one within each ISA's error bound)
and nothing else: `.reg` declarations (locals), `setp.<cmp>.<int type>`, `mov` of integers, `@p` /
`@!p` predication, global loads with any cache hint (`.cs`/`.lu` stay nontemporal, `ld.volatile`
volatile), `lop3.b32` (truth table), `prmt.b32` in its default mode (byte permute), float approximations
and OCP fp8 `cvt` (`ptx_float`), half-precision math, approximations and conversions (`ptx_half`),
ordered and weak loads/stores, `red`/`atom` (`cas` too), `fence`/`membar` (`ptx_memory`), two-element
`mov.b32`/`mov.b64` packs and unpacks and global `cvta` (`ptx_wide`), weak vector loads and stores
(`ptx_vector`), full-mask warp shuffles (`ptx_shfl`). lop3, prmt, fp8 and the half forms call
`rocm_compat_*` helpers defined once in the compat header (`HELPERS`). Any other instruction, float
compare, mode or register class makes the whole statement untranslated (None): the caller then declines it.
"""

from __future__ import annotations

import re

from agent.proposers.rules.ptx_float import FP8_HELPERS, float_instr
from agent.proposers.rules.ptx_half import HALF_HELPERS, half_instr
from agent.proposers.rules.ptx_memory import memory_instr
from agent.proposers.rules.ptx_shfl import shfl_instr
from agent.proposers.rules.ptx_vector import vector_instr
from agent.proposers.rules.ptx_wide import wide_instr

INT_TYPES = {
    "u32": "uint32_t",
    "s32": "int32_t",
    "b32": "uint32_t",
    "u64": "uint64_t",
    "s64": "int64_t",
    "b64": "uint64_t",
}
REG_TYPES = {
    **INT_TYPES,
    "pred": "bool",
    "f32": "float",
    "b16": "uint16_t",
    "u16": "uint16_t",
    "f16": "uint16_t",
}
REG_TYPES.update({"bf16": "uint16_t", "f16x2": "uint32_t", "bf16x2": "uint32_t"})
_CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_LD = re.compile(r"ld(\.volatile)?\.global(?:\.(nc|ca|cg|cs|lu|cv))?(?:\.L1::\w+)?(?:\.L2::\w+)?\.(\w+)")
_ADDR = re.compile(r"\[\s*(%\d+|\w+)\s*(?:\+\s*(-?(?:0x[0-9a-fA-F]+|\d+)))?\s*\]")
_IMM = re.compile(r"-?(?:0[xX][0-9a-fA-F]+|\d+)")
BIT_HELPERS = {
    "rocm_compat_lop3": """\
// lop3.b32: bit i of `lut` is the result for the inputs (a, b, c) = the bits of i, high to low.
__device__ inline uint32_t rocm_compat_lop3(uint32_t a, uint32_t b, uint32_t c, uint32_t lut) {
  uint32_t r = 0;
  for (int i = 0; i < 8; ++i)
    if ((lut >> i) & 1u) r |= ((i & 4) ? a : ~a) & ((i & 2) ? b : ~b) & ((i & 1) ? c : ~c);
  return r;
}
""",
    "rocm_compat_prmt": """\
// prmt.b32 (default mode): result byte i is byte sel[4i+2:4i] of {b, a}, sign-replicated when sel[4i+3].
__device__ inline uint32_t rocm_compat_prmt(uint32_t a, uint32_t b, uint32_t sel) {
  const uint64_t bytes = (uint64_t(b) << 32) | a;
  uint32_t r = 0;
  for (int i = 0; i < 4; ++i) {
    const uint32_t s = (sel >> (4 * i)) & 0xfu;
    uint32_t byte = uint32_t(bytes >> (8 * (s & 7u))) & 0xffu;
    if (s & 8u) byte = (byte & 0x80u) ? 0xffu : 0u;
    r |= byte << (8 * i);
  }
  return r;
}
""",
}
HELPERS = {**BIT_HELPERS, **FP8_HELPERS, **HALF_HELPERS}
HELPER_INCLUDES = {name: "hip/hip_fp16.h" for name in HALF_HELPERS if "__half" in HALF_HELPERS[name]}
"""Headers a helper's definition needs beyond <cstdint> (hipcc does not pre-include hip_fp16.h)."""


class Block:
    """The operands of one asm statement and the registers its PTX declares."""

    def __init__(self, outs: list[tuple[str, str]], ins: list[tuple[str, str]]):
        self.ops = outs + ins
        self.n_out = len(outs)
        self.regs: dict[str, str] = {}

    def value(self, tok: str) -> str | None:
        """A C++ rvalue for a PTX operand: `%N`, a declared register, or an integer immediate."""
        tok = tok.strip()
        if re.fullmatch(r"%\d+", tok):
            n = int(tok[1:])
            if n >= len(self.ops) or self.ops[n][0] not in "rlnh":
                return None
            return self.ops[n][1]
        if tok in self.regs:
            return f"rocport_{tok}"
        if _IMM.fullmatch(tok):
            return tok + ("u" if tok.lower().startswith("0x") else "")
        return None

    def dest(self, tok: str, ctype: str) -> str | None:
        """A C++ lvalue for a PTX destination of type `ctype`: an output operand or a declared register."""
        tok = tok.strip()
        if re.fullmatch(r"%\d+", tok):
            n = int(tok[1:])
            ok = n < self.n_out and self.ops[n][0] in ("r", "l", "h")
            return self.ops[n][1] if ok else None
        return f"rocport_{tok}" if self.regs.get(tok) in (ctype, "bool") else None

    def fvalue(self, tok: str) -> str | None:
        """A C++ float rvalue: an `"f"` operand or a declared `.f32` register (PTX float immediates are not read)."""
        tok = tok.strip()
        if re.fullmatch(r"%\d+", tok):
            n = int(tok[1:])
            return self.ops[n][1] if n < len(self.ops) and self.ops[n][0] == "f" else None
        return f"rocport_{tok}" if self.regs.get(tok) == "float" else None

    def address(self, arg: str, const: str = "const ") -> str | None:
        """The C++ pointer (to bytes when offset) for a PTX address `[%n]`, `[%n+off]` or `[reg]`."""
        addr = _ADDR.fullmatch(arg.strip())
        base = self.value(addr.group(1)) if addr else None
        if not addr or not base:
            return None
        return base if not addr.group(2) else f"reinterpret_cast<{const}char*>({base}) + {addr.group(2)}"

    def fdest(self, tok: str) -> str | None:
        """A C++ float lvalue: an `"=f"` output operand or a declared `.f32` register."""
        tok = tok.strip()
        if re.fullmatch(r"%\d+", tok):
            n = int(tok[1:])
            return self.ops[n][1] if n < self.n_out and self.ops[n][0] == "f" else None
        return f"rocport_{tok}" if self.regs.get(tok) == "float" else None


def _typed(ctype: str, value: str) -> str:
    """`value` converted to the instruction's type (an immediate is already written as one)."""
    return value if _IMM.fullmatch(value.rstrip("u")) else f"{ctype}({value})"


def _instr(block: Block, op: str, args: list[str]) -> str | None:
    """One PTX instruction as one C++ statement, or None."""
    parts = op.split(".")
    if (
        parts[0] == "setp"
        and len(parts) == 3
        and parts[1] in _CMP
        and parts[2] in INT_TYPES
        and len(args) == 3
    ):
        t = INT_TYPES[parts[2]]
        d, a, b = block.dest(args[0], "bool"), block.value(args[1]), block.value(args[2])
        return f"{d} = {_typed(t, a)} {_CMP[parts[1]]} {_typed(t, b)};" if d and a and b else None
    if op in ("mov.b32", "mov.b64") and len(args) == 2 and "{" in args[0] + args[1]:
        return wide_instr(block, op, args)
    if parts[0] == "mov" and len(parts) == 2 and parts[1] in INT_TYPES and len(args) == 2:
        d, a = block.dest(args[0], INT_TYPES[parts[1]]), block.value(args[1])
        return f"{d} = {_typed(INT_TYPES[parts[1]], a)};" if d and a else None
    load = _LD.fullmatch(op)
    if load and load.group(3) in INT_TYPES and len(args) == 2:
        return _load(block, load, args)
    other = (
        float_instr(block, parts, args)
        or half_instr(block, op, args)
        or memory_instr(block, parts, args)
        or wide_instr(block, op, args)
        or vector_instr(block, op, args)
        or shfl_instr(block, op, args)
    )
    if other:
        return other
    helper = {"lop3.b32": ("rocm_compat_lop3", 5), "prmt.b32": ("rocm_compat_prmt", 4)}.get(op)
    if helper and len(args) == helper[1]:
        d, vals = block.dest(args[0], "uint32_t"), [block.value(a) for a in args[1:]]
        if d and all(vals):
            return f"{d} = {helper[0]}({', '.join(v for v in vals if v)});"
    return None


def _load(block: Block, load: re.Match[str], args: list[str]) -> str | None:
    t = INT_TYPES[load.group(3)]
    d, ptr = block.dest(args[0], t), block.address(args[1])
    if not d or not ptr:
        return None
    if load.group(1):
        return f"{d} = *reinterpret_cast<const volatile {t}*>({ptr});"
    if load.group(2) in ("cs", "lu"):
        return f"{d} = __builtin_nontemporal_load(reinterpret_cast<const {t}*>({ptr}));"
    return f"{d} = *reinterpret_cast<const {t}*>({ptr});"


def translate(ptx: str, outs: list[tuple[str, str]], ins: list[tuple[str, str]]) -> list[str] | None:
    """C++ lines for the PTX of one asm statement (a `{...}` block when it declares registers), or None."""
    body = ptx.strip()
    if body.startswith("{") and body.endswith("}"):
        body = body[1:-1]
    if "%%" in body or not body.strip():
        return None
    block, lines = Block(outs, ins), []
    for stmt in (s.strip() for s in body.split(";")):
        if not stmt:
            continue
        reg = re.fullmatch(r"\.reg\s+\.(\w+)\s+([\w\s,]+)", stmt)
        if reg:
            if reg.group(1) not in REG_TYPES:
                return None
            names = [n.strip() for n in reg.group(2).split(",")]
            block.regs.update({n: REG_TYPES[reg.group(1)] for n in names})
            lines.append(f"{REG_TYPES[reg.group(1)]} {', '.join('rocport_' + n for n in names)};")
            continue
        guard = re.match(r"@(!?)(\w+)\s+", stmt)
        if guard and block.regs.get(guard.group(2)) != "bool":
            return None
        op, _, rest = stmt[guard.end() if guard else 0 :].partition(" ")
        c = _instr(block, op, re.split(r",(?![^\[{]*[\]}])", rest) if rest.strip() else [])
        if c is None:
            return None
        lines += _guarded(c.split("\n"), f"if ({guard.group(1)}rocport_{guard.group(2)}) " if guard else "")
    return ["{", *("  " + ln for ln in lines), "}"] if block.regs else lines


def _guarded(body: list[str], cond: str) -> list[str]:
    """The C++ lines of one instruction under its predicate (`cond`, empty when unpredicated)."""
    if not cond or len(body) == 1:
        return [cond + body[0], *body[1:]]
    if body[0] == "{":
        return [cond + "{", *body[1:]]
    return [cond + "{", *("  " + b for b in body), "}"]


def helpers_used(text: str) -> list[str]:
    """The HELPERS a rewritten file calls."""
    return [name for name in HELPERS if f"{name}(" in text]
