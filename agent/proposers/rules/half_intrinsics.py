"""bf16/fp16 intrinsics CUDA's headers declare and ROCm 6.4's hip_bf16.h/hip_fp16.h lack, in the compat header.

- Conversions: `__float2bfloat16_rn` (HIP's `__float2bfloat16` already rounds to nearest even),
  `__float2bfloat162_rn`, `__floats2bfloat162_rn`, the directed `__float2bfloat16_rz/_rd/_ru` (on the bits:
  truncate, then step the magnitude once when the dropped bits are not zero and the direction asks for it;
  NaN gives CUDA's canonical 0x7fff), and `__double2half` (clang's correctly rounded double -> _Float16).
- `__hmax2`/`__hmin2` on `__half2` (HIP 6.4 has them for bf16 only): HIP's `__hmax`/`__hmin` per lane, which
  return the other operand for one NaN, as CUDA's do.
- Shuffles of `__hip_bfloat16`/`__hip_bfloat162`: HIP's `__shfl*` have no bf16 overloads (the call is
  ambiguous), so each moves the value's bits through the 32-bit shuffle: exact.
Everything is under `#ifdef USE_ROCM`; nothing changes on CUDA.
"""

from __future__ import annotations

import re

from agent.proposers.rules.base import Workspace, make_proposal, register
from agent.proposers.rules.compat_header import add_block, compat_text, compat_view
from agent.proposers.rules.rounding import used_names
from tools.records import Failure, Proposal

_HD = "__host__ __device__ inline"
_BITS = "  const unsigned u = __builtin_bit_cast(unsigned, f);\n  if (f != f) return __ushort_as_bfloat16(0x7fff);\n"
_STEP = "  const bool inexact = (u & 0xffffu) != 0u, negative = (u >> 31) != 0u;\n"
DEFINITIONS = {
    "__float2bfloat16_rn": f"{_HD} __hip_bfloat16 __float2bfloat16_rn(float f) {{\n  return __float2bfloat16(f);\n}}\n",
    "__float2bfloat162_rn": (
        f"{_HD} __hip_bfloat162 __float2bfloat162_rn(float f) {{\n"
        "  return __hip_bfloat162{__float2bfloat16(f), __float2bfloat16(f)};\n}\n"
    ),
    "__floats2bfloat162_rn": (
        f"{_HD} __hip_bfloat162 __floats2bfloat162_rn(float a, float b) {{\n"
        "  return __hip_bfloat162{__float2bfloat16(a), __float2bfloat16(b)};\n}\n"
    ),
    "__float2bfloat16_rz": (
        f"{_HD} __hip_bfloat16 __float2bfloat16_rz(float f) {{\n{_BITS}"
        "  return __ushort_as_bfloat16((unsigned short)(u >> 16));\n}\n"
    ),
    "__float2bfloat16_rd": (
        f"{_HD} __hip_bfloat16 __float2bfloat16_rd(float f) {{\n{_BITS}{_STEP}"
        "  return __ushort_as_bfloat16((unsigned short)((u >> 16) + (inexact && negative)));\n}\n"
    ),
    "__float2bfloat16_ru": (
        f"{_HD} __hip_bfloat16 __float2bfloat16_ru(float f) {{\n{_BITS}{_STEP}"
        "  return __ushort_as_bfloat16((unsigned short)((u >> 16) + (inexact && !negative)));\n}\n"
    ),
    "__double2half": f"{_HD} __half __double2half(double d) {{\n  return __half(static_cast<_Float16>(d));\n}}\n",
    **{
        name: (
            f"{_HD} __half2 {name}(__half2 a, __half2 b) {{\n  return __halves2half2({one}(__low2half(a), "
            f"__low2half(b)), {one}(__high2half(a), __high2half(b)));\n}}\n"
        )
        for name, one in (("__hmax2", "__hmax"), ("__hmin2", "__hmin"))
    },
}
# HIP has these names for bf16 only: a half2 call finds no matching overload rather than no name.
HALF2_ONLY = ("__hmax2", "__hmin2")
NAME = re.compile(r"\b(" + "|".join(DEFINITIONS) + r")\b")
SHUFFLE_MARK = "// bf16 warp shuffles on ROCm"
# HIP's own parameter types, so that its overloads stay at least as good for every other value type
_SHUFFLES = {
    "__shfl": "int src_lane",
    "__shfl_xor": "int lane_mask",
    "__shfl_up": "unsigned int lane_delta",
    "__shfl_down": "unsigned int lane_delta",
}
SHUFFLES = (
    (
        f"{SHUFFLE_MARK}: HIP's __shfl* have no bf16 overloads; the bits travel through the 32-bit shuffle.\n"
        "// Templates viable for exactly the bf16 types, so no other call can become ambiguous.\n"
        "#ifdef USE_ROCM\n#include <hip/hip_bf16.h>\n#include <type_traits>\n"
    ),
    {
        fn: "".join(
            f"template <typename T, typename std::enable_if<std::is_same<T, {t}>::value, int>::type = 0>\n"
            f"__device__ inline T {fn}(T v, {arg}, int width = warpSize) {{\n"
            f"  {bits} b;\n  __builtin_memcpy(&b, &v, sizeof b);\n"
            f"  b = ({bits}){fn}(({wide})b, {arg.split()[-1]}, width);\n  __builtin_memcpy(&v, &b, sizeof b);\n"
            "  return v;\n}\n"
            for t, bits, wide in (
                ("__hip_bfloat16", "unsigned short", "int"),
                ("__hip_bfloat162", "unsigned", "unsigned"),
            )
        )
        for fn, arg in _SHUFFLES.items()
    },
)
_BF16_TYPES = re.compile(r"\b(?:__)?(?:nv|hip)_bfloat162?\b")
_AMBIGUOUS = re.compile(r"call to '(__shfl(?:_xor|_up|_down)?)' is ambiguous")
MARK = "// bf16/fp16 intrinsics HIP lacks"


def shuffle_block(ws: Workspace, rel: str, text: str) -> str | None:
    """The bf16 overloads of the shuffles `text` calls when it or a header it includes names a bf16 type and
    the compat header lacks them."""
    from agent.proposers.rules.runtime_api import _closure

    used = [fn for fn in _SHUFFLES if re.search(rf"\b{fn}(?:_sync)?\s*\(", text)]
    if not used or SHUFFLE_MARK in compat_text(ws, rel):
        return None
    if not any(_BF16_TYPES.search(t or "") for t in (text, *(ws.read(r) for r in _closure(ws, rel)))):
        return None
    return SHUFFLES[0] + "".join(SHUFFLES[1][fn] for fn in used) + "#endif\n"


class HalfIntrinsicFixer:
    """`__float2bfloat16_rn`, `__floats2bfloat162_rn`, `__double2half` & co undeclared on ROCm, and bf16 shuffles."""

    family = "half_intrinsics"
    kinds: tuple[str, ...] = ("compile_error", "bf16_type", "fp16_type", "warp_intrinsic")

    def propose(self, failure: Failure, ws: Workspace) -> Proposal | None:
        message = failure.message or ""
        ambiguous = _AMBIGUOUS.search(message)
        undeclared = "undeclared" in message or (
            failure.symbol in HALF2_ONLY and "no matching function" in message
        )
        if not ambiguous and (failure.symbol not in DEFINITIONS or not undeclared):
            return None
        view = compat_view(ws, failure)
        if view is None:
            return None
        rel, text, have = view
        missing = [n for n in used_names(text, NAME) if f" {n}(" not in have]
        body = [
            f"{MARK}, with the same rounding (HIP's __float2bfloat16 rounds to nearest even).\n",
            "#ifdef USE_ROCM\n#include <hip/hip_bf16.h>\n#include <hip/hip_fp16.h>\n",
            *(DEFINITIONS[n] for n in missing),
            "#endif\n",
        ]
        shuffles = shuffle_block(ws, rel, text)
        block = ("".join(body) if missing else "") + (shuffles or "")
        if not block:
            return None
        done = missing + (["bf16 __shfl* overloads"] if shuffles else [])
        return make_proposal(
            failure,
            self.family,
            add_block(ws, rel, block),
            (
                f"{rel}: {', '.join(done)}: CUDA declares them, ROCm 6.4's hip_bf16.h/hip_fp16.h do not; the compat "
                f"header defines them under `#ifdef USE_ROCM` with CUDA's rounding (nearest even through HIP's "
                f"__float2bfloat16; the directed forms on the bits; half2 max/min lane by lane with HIP's "
                f"CUDA-like NaN rules) and bf16 shuffles on the value's bits. Nothing changes on CUDA."
            ),
            ws=ws,
        )


register(HalfIntrinsicFixer())
