"""Atomics CUDA has and ROCm 6.4's HIP lacks, in the compat header under `#ifdef USE_ROCM`.

- 16-bit: `atomicAdd` on `__half`/`__nv_bfloat16` and `atomicCAS` on `unsigned short` become a CAS loop on the
  aligned 32-bit word that holds the value (CUDA's own form before sm_70: only that value's bits change);
  `atomicAdd` on `__half2`/`__nv_bfloat162` a CAS loop on the whole word (atomic as a whole, which is more
  than CUDA promises). The adds are HIP's `__hadd`/`__hadd2`: round to nearest as CUDA's (a bf16 sum through
  float rounds once more, which never changes an add's result: two bf16 addends sum exactly in float when
  their exponents are within 16, and otherwise the smaller is far below half a bf16 ulp).
- Block scope: `atomicAdd_block` & co call the device-scope atomic. A device-scope atomic is also atomic
  among a block's threads, so the result is the same; only the cost of the wider scope differs.
Nothing changes on CUDA.
"""

from __future__ import annotations

import re

from agent.proposers.rules.base import Workspace, make_proposal, register
from agent.proposers.rules.compat_header import add_block, compat_view
from tools.records import Failure, Proposal

WORD16 = """\
// A 16-bit atomic by a CAS loop on the aligned 32-bit word that holds it; op(old) gives the new value.
template <typename Op>
__device__ inline unsigned short rocm_compat_atomic16(unsigned short* address, Op op) {
  unsigned* word = reinterpret_cast<unsigned*>(reinterpret_cast<size_t>(address) & ~size_t(3));
  const unsigned shift = (reinterpret_cast<size_t>(address) & 2u) * 8u;
  unsigned old = *word, assumed;
  do {
    assumed = old;
    const unsigned next = op((unsigned short)(assumed >> shift));
    old = atomicCAS(word, assumed, (assumed & ~(0xffffu << shift)) | ((next & 0xffffu) << shift));
  } while (old != assumed);
  return (unsigned short)(old >> shift);
}
"""
WORD32 = """\
// A 32-bit value type updated by a CAS loop on its word; op(old) gives the new value.
template <typename T, typename Op>
__device__ inline T rocm_compat_atomic32(T* address, Op op) {
  unsigned* word = reinterpret_cast<unsigned*>(address);
  unsigned old = *word, assumed;
  do {
    assumed = old;
    T cur, next;
    __builtin_memcpy(&cur, &assumed, 4);
    next = op(cur);
    unsigned bits;
    __builtin_memcpy(&bits, &next, 4);
    old = atomicCAS(word, assumed, bits);
  } while (old != assumed);
  T out;
  __builtin_memcpy(&out, &old, 4);
  return out;
}
"""
_ADD16 = (
    "__device__ inline {t} atomicAdd({t}* address, {t} val) {{\n"
    "  return {from_bits}(rocm_compat_atomic16(reinterpret_cast<unsigned short*>(address), [=](unsigned short old) {{\n"
    "    return {to_bits}(__hadd({from_bits}(old), val));\n  }}));\n}}\n"
)
_ADD32 = (
    "__device__ inline {t} atomicAdd({t}* address, {t} val) {{\n"
    "  return rocm_compat_atomic32(address, [=]({t} old) {{ return __hadd2(old, val); }});\n}}\n"
)
# name -> (pattern of the type in the file, helper it needs, definition)
OVERLOADS = {
    "__half": (
        r"\b(?:__)?half\b|\b__nv_half\b",
        WORD16,
        _ADD16.format(t="__half", from_bits="__ushort_as_half", to_bits="__half_as_ushort"),
    ),
    "__half2": (r"\b(?:__)?half2\b|\b__nv_half2\b", WORD32, _ADD32.format(t="__half2")),
    "__hip_bfloat16": (
        r"\b(?:__)?nv_bfloat16\b|\b__hip_bfloat16\b",
        WORD16,
        _ADD16.format(t="__hip_bfloat16", from_bits="__ushort_as_bfloat16", to_bits="__bfloat16_as_ushort"),
    ),
    "__hip_bfloat162": (
        r"\b(?:__)?nv_bfloat162\b|\b__hip_bfloat162\b",
        WORD32,
        _ADD32.format(t="__hip_bfloat162"),
    ),
    "unsigned short": (
        r"\bunsigned\s+short\b|\buint16_t\b|\bushort\b",
        WORD16,
        (
            "__device__ inline unsigned short atomicCAS(unsigned short* address, unsigned short compare, "
            "unsigned short val) {\n  return rocm_compat_atomic16(address, [=](unsigned short old) "
            "{ return old == compare ? val : old; });\n}\n"
        ),
    ),
}
FOR_CALL = {
    "atomicAdd": ("__half", "__half2", "__hip_bfloat16", "__hip_bfloat162"),
    "atomicCAS": ("unsigned short",),
}
BLOCK_OPS = ("Add", "Sub", "Exch", "Min", "Max", "Inc", "Dec", "And", "Or", "Xor")
_BLOCK = re.compile(r"\batomic(" + "|".join(BLOCK_OPS) + r"|CAS)_block\b")
_NO_MATCH = re.compile(r"no matching function for call to '(atomicAdd|atomicCAS)'")
MARK = "// CUDA atomics HIP lacks"


def _block_scope(op: str) -> str:
    if op == "CAS":
        return (
            "template <typename T>\n__device__ inline T atomicCAS_block(T* address, T compare, T val) {\n"
            "  return atomicCAS(address, compare, val);\n}\n"
        )
    return (
        f"template <typename T, typename U>\n__device__ inline T atomic{op}_block(T* address, U val) {{\n"
        f"  return atomic{op}(address, val);\n}}\n"
    )


class Atomics16Fixer:
    """16-bit `atomicAdd`/`atomicCAS` and block-scope `atomic*_block` missing on ROCm -> compat-header definitions."""

    family = "atomics16"
    kinds: tuple[str, ...] = ("compile_error", "fp16_type", "bf16_type")

    def propose(self, failure: Failure, ws: Workspace) -> Proposal | None:
        message = failure.message or ""
        call = _NO_MATCH.search(message)
        scoped = _BLOCK.fullmatch(failure.symbol or "") and "undeclared" in message
        if not call and not scoped:
            return None
        view = compat_view(ws, failure)
        if view is None:
            return None
        rel, text, have = view
        wanted = [t for t in FOR_CALL[call.group(1)] if re.search(OVERLOADS[t][0], text)] if call else []
        defs = [OVERLOADS[t][2] for t in wanted if OVERLOADS[t][2].split("{")[0] not in have]
        helpers = [h for h in (WORD16, WORD32) if any(OVERLOADS[t][1] == h for t in wanted)]
        helpers = [h for h in helpers if h.splitlines()[3] not in have]
        ops = sorted(
            {m.group(1) for m in _BLOCK.finditer(text)}
            - {op for op in (*BLOCK_OPS, "CAS") if f" atomic{op}_block(" in have}
        )
        if not defs and not ops:
            return None
        body = [
            f"{MARK}: 16-bit ones by CAS on the 32-bit word, block scope through the device-scope atomic.\n",
            "#ifdef USE_ROCM\n#include <hip/hip_runtime.h>\n#include <hip/hip_fp16.h>\n#include <hip/hip_bf16.h>\n",
            *helpers,
            *defs,
            *(_block_scope(op) for op in ops),
            "#endif\n",
        ]
        done = [f"atomicAdd({t}*)" if t != "unsigned short" else "atomicCAS(unsigned short*)" for t in wanted]
        done += [f"atomic{op}_block" for op in ops]
        return make_proposal(
            failure,
            self.family,
            add_block(ws, rel, "".join(body)),
            (
                f"{rel}: {', '.join(done)}: CUDA atomics ROCm 6.4's HIP lacks, defined in the compat header under "
                f"`#ifdef USE_ROCM`: 16-bit values by a CAS loop on the aligned 32-bit word (only their bits change; "
                f"adds round to nearest as on CUDA), block scope through the device-scope atomic (atomic among the "
                f"block's threads too). Nothing changes on CUDA. Compiled, not run."
            ),
            ws=ws,
        )


register(Atomics16Fixer())
