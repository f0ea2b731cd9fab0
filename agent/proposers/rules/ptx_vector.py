"""Weak vector loads and stores (`ld/st .v2/.v4/.v8`), for the straight-line translation (`ptx_translate`).

PTX ISA facts: `ld{.volatile}.global{.hint}.v<n>.<type> {d0, ..}, [a]` reads n consecutive elements from
`a` (which is n * size aligned), `st ... [a], {v0, ..}` writes them; the memory consistency model treats
a vector access as the n scalar accesses in unspecified order ("Vector Data-types"), so one C++ access
per element is the same program. Element types: 32-bit integers (`"r"`), 64-bit integers (`"l"`), `.f32`
(`"f"`), `.f64` (`"d"`). Cache hints keep the scalar forms' meaning: `.cs`/`.lu` (evict-first streaming)
-> nontemporal accesses, `.volatile` -> volatile ones, every other hint a plain access. Ordered
(`.acquire`/`.release`/`.relaxed`) vectors and other state spaces stay untranslated (None).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent.proposers.rules.ptx_translate import Block

_VEC = re.compile(
    r"(ld|st)(\.volatile)?\.global(?:\.(nc|ca|cg|cs|lu|cv|wb|wt))?(?:\.L1::\w+)?(?:\.L2::\w+)?"
    r"\.v([248])\.(\w+)"
)
ELEMENTS = {
    "u32": ("r", "uint32_t"),
    "b32": ("r", "uint32_t"),
    "s32": ("r", "int32_t"),
    "u64": ("l", "uint64_t"),
    "b64": ("l", "uint64_t"),
    "s64": ("l", "int64_t"),
    "f32": ("f", "float"),
    "f64": ("d", "double"),
}
_LOAD_HINTS, _STORE_HINTS = ("nc", "ca", "cg", "cs", "lu", "cv"), ("wb", "cg", "cs", "wt")


def _list(arg: str) -> list[str]:
    arg = arg.strip()
    return [e.strip() for e in arg[1:-1].split(",")] if arg.startswith("{") and arg.endswith("}") else []


def _element(block: Block, tok: str, letter: str, ctype: str, out: bool) -> str | None:
    """An operand of constraint `letter` (an output when `out`) or a declared register of type `ctype`."""
    if re.fullmatch(r"%\d+", tok):
        n = int(tok[1:])
        ok = n < len(block.ops) and block.ops[n][0] == letter and (n < block.n_out) == out
        return block.ops[n][1] if ok else None
    return f"rocport_{tok}" if block.regs.get(tok) == ctype else None


def vector_instr(block: Block, op: str, args: list[str]) -> str | None:
    """One weak vector `ld`/`st` as one C++ block (one line per element access), or None."""
    m = _VEC.fullmatch(op)
    if not m or m.group(5) not in ELEMENTS or len(args) != 2:
        return None
    kind, volatile, hint, n = m.group(1), bool(m.group(2)), m.group(3), int(m.group(4))
    if hint and (hint not in (_LOAD_HINTS if kind == "ld" else _STORE_HINTS) or volatile):
        return None
    letter, t = ELEMENTS[m.group(5)]
    regs = _list(args[0] if kind == "ld" else args[1])
    ptr = block.address(args[1] if kind == "ld" else args[0], "const " if kind == "ld" else "")
    values = [_element(block, r, letter, t, kind == "ld") for r in regs]
    if len(regs) != n or not ptr or not all(values):
        return None
    q = ("const " if kind == "ld" else "") + ("volatile " if volatile else "")
    head = f"{q}{t}* rocport_v = reinterpret_cast<{q}{t}*>({ptr});"
    if hint in ("cs", "lu") and kind == "ld":
        body = [f"{v} = __builtin_nontemporal_load(rocport_v + {i});" for i, v in enumerate(values)]
    elif hint == "cs":
        body = [f"__builtin_nontemporal_store({t}({v}), rocport_v + {i});" for i, v in enumerate(values)]
    elif kind == "ld":
        body = [f"{v} = rocport_v[{i}];" for i, v in enumerate(values)]
    else:
        body = [f"rocport_v[{i}] = {t}({v});" for i, v in enumerate(values)]
    return "\n".join(["{", *("  " + ln for ln in [head, *body]), "}"])
