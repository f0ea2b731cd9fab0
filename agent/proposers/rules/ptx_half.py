"""Half-precision PTX with a ROCm counterpart, for the straight-line translation (`ptx_translate`).

PTX ISA facts ("Half Precision Floating-Point Instructions", "cvt"): a `.f16`/`.bf16` value travels in a
16-bit register (the `"h"` constraint), a `.f16x2`/`.bf16x2` pair in a 32-bit one (`"r"`), element 0 in
the low 16 bits ("Packed Data Types"); the operands hold IEEE bits, so the ROCm side converts the bits
to HIP's `__half`/`__half2` and back (`rocm_compat_f16*`, defined once in the compat header).
- `ex2.approx.{f16,f16x2} d, a` (2^a) -> `hexp2`/`h2exp2` (`__ocml_exp2_f16`, AMDGPU's `v_exp_f16`: the same
  kind of hardware approximation); `tanh.approx.{f16,f16x2}` -> `tanhf` of the value widened to float,
  rounded back to nearest (AMDGPU has no tanh instruction). The ISA bounds their error, not their bits.
- `ex2.approx.ftz.{bf16,bf16x2}` and `tanh.approx.{bf16,bf16x2}` -> `exp2f`/`tanhf` in float (bf16 widens
  exactly: its bits are a float's high half), rounded back to nearest even.
- `add/sub/mul{.rn}.{f16,f16x2}` and `fma.rn.{f16,f16x2}` -> `__hadd/__hsub/__hmul/__hfma` (and the `2`
  forms): IEEE binary16 with round-to-nearest-even, `fma` fused on both sides. PTX lets ptxas fuse a
  `mul`/`add` that has no `.rn`; the ROCm form never fuses (so it equals the `.rn` result).
- `cvt.f32.f16` (exact), `cvt.rn.f16.f32`, and `cvt.rn.f16x2.f32 d, a, b` (a to the upper half, b to the
  lower) -> `__half2float` / `__float2half_rn` / `__halves2half2`.
`.ftz`/`.sat` on the f16 forms, other rounding modes and bf16 arithmetic stay untranslated (None).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent.proposers.rules.ptx_translate import Block

HALF_HELPERS = {
    "rocm_compat_f16": """\
// .f16 / .f16x2 registers hold IEEE binary16 bits, element 0 of a pair in the low 16 bits.
__device__ inline __half rocm_compat_f16(uint16_t a) { return __ushort_as_half(a); }
""",
    "rocm_compat_f16x2": (
        "__device__ inline __half2 rocm_compat_f16x2(uint32_t a) { return __builtin_bit_cast(__half2, a); }\n"
    ),
    "rocm_compat_f16_bits": (
        "__device__ inline uint16_t rocm_compat_f16_bits(__half a) { return __half_as_ushort(a); }\n"
    ),
    "rocm_compat_f16x2_bits": (
        "__device__ inline uint32_t rocm_compat_f16x2_bits(__half2 a) { return __builtin_bit_cast(uint32_t, a); }\n"
    ),
    "rocm_compat_bf16": """\
// bf16 <-> float: a bf16 is the high half of a float's bits; narrowing rounds to nearest even, NaN stays NaN.
__device__ inline float rocm_compat_bf16_to_float(uint16_t a) { return __builtin_bit_cast(float, uint32_t(a) << 16); }
__device__ inline uint16_t rocm_compat_bf16(float x) {
  const uint32_t u = __builtin_bit_cast(uint32_t, x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40u);  // quiet NaN, sign kept
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
""",
}
# (instruction, type) -> C++ over `{a}`, `{b}`, `{c}` (operands already as __half / __half2), giving a __half(2).
_F16 = {
    ("ex2", "f16"): "hexp2({a})",
    ("ex2", "f16x2"): "h2exp2({a})",
    ("tanh", "f16"): "__float2half(tanhf(__half2float({a})))",
    ("tanh", "f16x2"): "__floats2half2_rn(tanhf(__low2float({a})), tanhf(__high2float({a})))",
    ("add", "f16"): "__hadd({a}, {b})",
    ("add", "f16x2"): "__hadd2({a}, {b})",
    ("sub", "f16"): "__hsub({a}, {b})",
    ("sub", "f16x2"): "__hsub2({a}, {b})",
    ("mul", "f16"): "__hmul({a}, {b})",
    ("mul", "f16x2"): "__hmul2({a}, {b})",
    ("fma", "f16"): "__hfma({a}, {b}, {c})",
    ("fma", "f16x2"): "__hfma2({a}, {b}, {c})",
}
_BF16 = {"ex2": "exp2f", "tanh": "tanhf"}
_WIDTH = {"f16": ("h", "uint16_t"), "bf16": ("h", "uint16_t"), "f16x2": ("r", "uint32_t")}
_WIDTH["bf16x2"] = ("r", "uint32_t")
# The qualifiers each spelling takes between the instruction and the type (PTX ISA).
_QUALS = {"ex2": ("approx",), "tanh": ("approx",), "add": ("", "rn"), "sub": ("", "rn"), "mul": ("", "rn")}
_QUALS["fma"] = ("rn",)


def _operand(block: Block, tok: str, letter: str, ctype: str, out: bool) -> str | None:
    """An `"h"`/`"r"` operand or a declared register of the element's width, as a C++ expression."""
    tok = tok.strip()
    if tok.startswith("%") and tok[1:].isdigit():
        n = int(tok[1:])
        ok = n < len(block.ops) and block.ops[n][0] == letter and (n < block.n_out) == out
        return block.ops[n][1] if ok else None
    return f"rocport_{tok}" if block.regs.get(tok) == ctype else None


def _bf16(fn: str, ty: str, a: str) -> str:
    one = "rocm_compat_bf16({f}(rocm_compat_bf16_to_float({v})))"
    if ty == "bf16":
        return one.format(f=_BF16[fn], v=a)
    lo, hi = (
        one.format(f=_BF16[fn], v=f"uint16_t({a})"),
        one.format(f=_BF16[fn], v=f"uint16_t(uint32_t({a}) >> 16)"),
    )
    return f"uint32_t({lo}) | uint32_t({hi}) << 16"


def _cvt(block: Block, op: str, args: list[str]) -> str | None:
    """`cvt` between f32 and f16 / f16x2."""
    f = block.fvalue
    if op == "cvt.f32.f16" and len(args) == 2:
        d, a = block.fdest(args[0]), _operand(block, args[1], "h", "uint16_t", False)
        return f"{d} = __half2float(rocm_compat_f16({a}));" if d and a else None
    if op == "cvt.rn.f16.f32" and len(args) == 2:
        d, a = _operand(block, args[0], "h", "uint16_t", True), f(args[1])
        return f"{d} = rocm_compat_f16_bits(__float2half_rn({a}));" if d and a else None
    if op == "cvt.rn.f16x2.f32" and len(args) == 3:
        d, hi, lo = _operand(block, args[0], "r", "uint32_t", True), f(args[1]), f(args[2])
        pair = f"__halves2half2(__float2half_rn({lo}), __float2half_rn({hi}))"
        return f"{d} = rocm_compat_f16x2_bits({pair});" if d and hi and lo else None
    return None


def half_instr(block: Block, op: str, args: list[str]) -> str | None:
    """One half-precision PTX instruction as one C++ statement, or None."""
    if op.startswith("cvt."):
        return _cvt(block, op, args)
    parts = op.split(".")
    fn, ty, quals = parts[0], parts[-1], ".".join(parts[1:-1])
    if fn not in _QUALS or ty not in _WIDTH:
        return None
    bf = ty.startswith("bf16")
    # The ISA spells ex2 on bf16 only with .ftz; the f16 forms here take no .ftz/.sat.
    want = "approx.ftz" if (bf and fn == "ex2") else None
    if (want and quals != want) or (not want and quals not in _QUALS[fn]) or (bf and fn not in _BF16):
        return None
    letter, ctype = _WIDTH[ty]
    n_in = 3 if fn == "fma" else 2 if fn in ("add", "sub", "mul") else 1
    d = _operand(block, args[0], letter, ctype, True) if len(args) == n_in + 1 else None
    ins = [_operand(block, a, letter, ctype, False) for a in args[1:]]
    if not d or not all(ins):
        return None
    if bf:
        return f"{d} = {_bf16(fn, ty, str(ins[0]))};"
    wrap = "rocm_compat_f16x2" if ty == "f16x2" else "rocm_compat_f16"
    expr = _F16[(fn, ty)].format(**{name: f"{wrap}({val})" for name, val in zip("abc", ins, strict=False)})
    return f"{d} = {wrap}_bits({expr});"
