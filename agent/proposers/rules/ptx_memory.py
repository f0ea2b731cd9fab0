"""Memory-ordering PTX with a ROCm counterpart, for the straight-line translation (`ptx_translate`).

The PTX memory model's orders and scopes map one to one onto the HIP atomic builtins':
`.relaxed/.acquire/.release/.acq_rel/.sc` -> `__ATOMIC_RELAXED/ACQUIRE/RELEASE/ACQ_REL/SEQ_CST`, and
`.cta/.gpu/.sys` -> `__HIP_MEMORY_SCOPE_WORKGROUP/AGENT/SYSTEM` (the `"workgroup"/"agent"/""` sync
scopes of `__builtin_amdgcn_fence`). So `ld.{relaxed,acquire}.<scope>` becomes `__hip_atomic_load`,
`st.{relaxed,release}.<scope>` `__hip_atomic_store`, `red`/`atom` (add, and, or, xor, min, max, exch)
`__hip_atomic_fetch_<op>` (no order: relaxed, no scope: gpu, as PTX defines), `atom.cas d, [a], b, c`
(d = old *a; *a = c where it equalled b) `__hip_atomic_compare_exchange_strong` (whose `expected` ends up
holding the old value either way; its failure order drops the release half), `fence.{sc,acq_rel}.<scope>`
and `membar.{cta,gl,sys}` (= fence.sc) `__builtin_amdgcn_fence`. `prefetch{,u}.{global,local}.{L1,L2}` (a cache
hint) becomes nothing: the address is evaluated and dropped. A weak `st` becomes a plain store
(`.cs`: nontemporal, `.volatile`: volatile). Only global or generic addresses, integer types; `.cluster`
scope, vectors and cache-level qualifiers leave the statement untranslated (None).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent.proposers.rules.ptx_translate import Block

ORDERS = {
    "relaxed": "__ATOMIC_RELAXED",
    "acquire": "__ATOMIC_ACQUIRE",
    "release": "__ATOMIC_RELEASE",
    "acq_rel": "__ATOMIC_ACQ_REL",
    "sc": "__ATOMIC_SEQ_CST",
}
SCOPES = {"cta": "WORKGROUP", "gpu": "AGENT", "sys": "SYSTEM"}
FENCE_SCOPES = {"cta": '"workgroup"', "gpu": '"agent"', "sys": '""'}
MEMBAR = {"cta": "cta", "gl": "gpu", "sys": "sys"}
WORDS = {"b32": "uint32_t", "u32": "uint32_t", "s32": "int32_t", "b64": "uint64_t", "u64": "uint64_t"}
WORDS["s64"] = "int64_t"
FETCH = {"add": "add", "and": "and", "or": "or", "xor": "xor", "min": "min", "max": "max", "exch": "exchange"}
_WEAK_HINTS = {"wb", "cg", "wt"}


class _Qualifiers:
    """The dot-qualifiers of one memory instruction, sorted into what they mean."""

    def __init__(self, parts: list[str]):
        self.order = [p for p in parts if p in ORDERS]
        self.scope = [p for p in parts if p in SCOPES]
        self.ops = [p for p in parts if p in FETCH]
        self.types = [p for p in parts if p in WORDS]
        self.hints = [p for p in parts if p in _WEAK_HINTS or p in ("cs", "volatile")]
        known = len(self.order) + len(self.scope) + len(self.ops) + len(self.types) + len(self.hints)
        self.clean = known + parts.count("global") == len(parts) and len(self.types) == 1

    def atomic(self, default_order: str | None) -> tuple[str, str] | None:
        """(order, scope) builtin arguments, or None when missing or ambiguous."""
        order = self.order or ([default_order] if default_order else [])
        scope = self.scope or (["gpu"] if default_order else [])
        if len(order) != 1 or len(scope) != 1 or self.hints:
            return None
        return ORDERS[order[0]], f"__HIP_MEMORY_SCOPE_{SCOPES[scope[0]]}"


def memory_instr(block: Block, parts: list[str], args: list[str]) -> str | None:
    """One memory-ordering PTX instruction (split at dots) as one C++ statement, or None."""
    if parts[0] == "fence" and len(parts) == 3 and parts[1] in ("sc", "acq_rel") and parts[2] in SCOPES:
        return f"__builtin_amdgcn_fence({ORDERS[parts[1]]}, {FENCE_SCOPES[parts[2]]});" if not args else None
    if parts[0] == "membar" and len(parts) == 2 and parts[1] in MEMBAR and not args:
        return f"__builtin_amdgcn_fence(__ATOMIC_SEQ_CST, {FENCE_SCOPES[MEMBAR[parts[1]]]});"
    if parts[0] in ("prefetch", "prefetchu") and len(args) == 1 and parts[-1].split("::")[0] in ("L1", "L2"):
        # a cache hint only: gfx9 has no data prefetch instruction, so nothing is issued (same results)
        addr = block.address(args[0]) if set(parts[1:-1]) <= {"global", "local"} else None
        return f"(void)({addr});" if addr else None
    q = _Qualifiers([p for p in parts[1:] if p != "cas"])
    if parts[0] not in ("ld", "st", "red", "atom") or not q.clean:
        return None
    t = WORDS[q.types[0]]
    if "cas" in parts:
        return _cas(block, q, t, args) if parts[0] == "atom" and not q.ops and len(args) == 4 else None
    if parts[0] == "ld" and len(args) == 2 and q.order and not q.ops:
        d, ptr, how = block.dest(args[0], t), block.address(args[1]), q.atomic(None)
        return (
            f"{d} = __hip_atomic_load(reinterpret_cast<const {t}*>({ptr}), {', '.join(how)});"
            if d and ptr and how
            else None
        )
    if parts[0] == "st" and len(args) == 2 and not q.ops:
        return _store(block, q, t, args)
    if parts[0] in ("red", "atom") and len(q.ops) == 1 and len(args) == (2 if parts[0] == "red" else 3):
        ptr, v, how = block.address(args[-2], ""), block.value(args[-1]), q.atomic("relaxed")
        if not (ptr and v and how):
            return None
        call = f"__hip_atomic_fetch_{FETCH[q.ops[0]]}(reinterpret_cast<{t}*>({ptr}), {t}({v}), {', '.join(how)});"
        d = block.dest(args[0], t) if parts[0] == "atom" else ""
        return call if parts[0] == "red" else (f"{d} = {call}" if d else None)
    return None


def _store(block: Block, q: _Qualifiers, t: str, args: list[str]) -> str | None:
    """`st` with an order (an atomic store) or weak with a cache hint (a plain, volatile or nontemporal one)."""
    ptr, v = block.address(args[0], ""), block.value(args[1])
    if not (ptr and v) or len(q.hints) > 1:
        return None
    if q.order:
        how = q.atomic(None)
        return (
            f"__hip_atomic_store(reinterpret_cast<{t}*>({ptr}), {t}({v}), {', '.join(how)});" if how else None
        )
    if q.scope:
        return None
    if q.hints == ["volatile"]:
        return f"*reinterpret_cast<volatile {t}*>({ptr}) = {t}({v});"
    if q.hints == ["cs"]:
        return f"__builtin_nontemporal_store({t}({v}), reinterpret_cast<{t}*>({ptr}));"
    return f"*reinterpret_cast<{t}*>({ptr}) = {t}({v});"


def _cas(block: Block, q: _Qualifiers, t: str, args: list[str]) -> str | None:
    """`atom.cas d, [a], b, c` as a strong compare-exchange; `d` gets the old value whether it swapped or not."""
    d, ptr, cmp, new = (
        block.dest(args[0], t),
        block.address(args[1], ""),
        block.value(args[2]),
        block.value(args[3]),
    )
    how = q.atomic("relaxed")
    if not (d and ptr and cmp and new and how):
        return None
    order, scope = how
    fail = {"__ATOMIC_RELEASE": "__ATOMIC_RELAXED", "__ATOMIC_ACQ_REL": "__ATOMIC_ACQUIRE"}.get(order, order)
    call = (
        f"__hip_atomic_compare_exchange_strong(reinterpret_cast<{t}*>({ptr}), &rocport_old, {t}({new}), "
        f"{order}, {fail}, {scope});"
    )
    return f"{{\n  {t} rocport_old = {t}({cmp});\n  {call}\n  {d} = rocport_old;\n}}"
