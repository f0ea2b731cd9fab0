"""Float PTX instructions with a ROCm counterpart, for the straight-line translation (`ptx_translate`).

`<fn>.approx{.ftz}.f32 d, a` becomes the AMDGPU instruction with the same definition: ex2 ->
`__builtin_amdgcn_exp2f` (v_exp_f32, 2^a), lg2 -> `__builtin_amdgcn_logf` (v_log_f32, log2 a), rcp ->
`__builtin_amdgcn_rcpf` (v_rcp_f32, 1/a), rsqrt -> `__builtin_amdgcn_rsqf` (v_rsq_f32), sqrt ->
`__builtin_amdgcn_sqrtf` (v_sqrt_f32), sin/cos -> `__sinf`/`__cosf`. AMDGPU has no tanh instruction, so
`tanh.approx` becomes `tanhf`, which is more accurate than PTX's bound (2^-10.987 relative). Both sides
are approximations within their ISA's error bound, not bit-equal, and `.ftz` (flush subnormal inputs
and results) is not reproduced: the ROCm form follows the unit's denormal mode.

`cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32 d, a, b` (OCP fp8, `a` in the upper byte) calls
`rocm_compat_fp8`, our software encoder. ROCm 6.4's `__hip_cvt_float2_to_fp8x2` does not fit: on gfx942
it converts to the FNUZ formats only (it asserts on `__HIP_E4M3`/`__HIP_E5M2`), and its fast path drops
the satfinite clamp of the second value.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent.proposers.rules.ptx_translate import Block

APPROX = {
    "ex2": "__builtin_amdgcn_exp2f",
    "lg2": "__builtin_amdgcn_logf",
    "rcp": "__builtin_amdgcn_rcpf",
    "rsqrt": "__builtin_amdgcn_rsqf",
    "sqrt": "__builtin_amdgcn_sqrtf",
    "sin": "__sinf",
    "cos": "__cosf",
    "tanh": "tanhf",
}
FP8 = {"e4m3x2": "3, 7, 0x7eu", "e5m2x2": "2, 15, 0x7bu"}
"""mantissa bits, exponent bias, largest finite code of each OCP fp8 format."""
FP8_HELPERS = {
    "rocm_compat_fp8": """\
// cvt.rn.satfinite.{e4m3,e5m2}.f32 (OCP fp8): round to nearest even; beyond the largest finite value
// (infinity too) saturate to it with the sign kept; NaN becomes 0x7f.
__device__ inline uint32_t rocm_compat_fp8(float x, int mant, int bias, uint32_t max_code) {
  const uint32_t bits = __builtin_bit_cast(uint32_t, x), sign = (bits >> 24) & 0x80u, mag = bits & 0x7fffffffu;
  if (mag > 0x7f800000u) return 0x7fu;  // NaN: the canonical NaN of both formats
  if (mag >= 0x47800000u) return sign | max_code;  // |x| >= 2^16, beyond both formats
  int e = int(mag >> 23) - 127;
  if (e < 1 - bias) e = 1 - bias;  // subnormal range: one fixed quantum
  const float quantum = __builtin_bit_cast(float, uint32_t(e - mant + 127) << 23);
  // r counts quanta (the implicit bit included), so a carry to 2^(mant+1) moves into the exponent field.
  const uint32_t r = uint32_t(__builtin_rintf(__builtin_bit_cast(float, mag) / quantum));
  const uint32_t code = (uint32_t(e + bias - 1) << mant) + r;
  return sign | (code > max_code ? max_code : code);
}
""",
}


def float_instr(block: Block, parts: list[str], args: list[str]) -> str | None:
    """One float PTX instruction (split at dots) as one C++ statement, or None."""
    if len(parts) in (3, 4) and parts[0] in APPROX and parts[1] == "approx" and parts[-1] == "f32":
        if (len(parts) == 4 and parts[2] != "ftz") or len(args) != 2:
            return None
        d, a = block.fdest(args[0]), block.fvalue(args[1])
        return f"{d} = {APPROX[parts[0]]}({a});" if d and a else None
    if parts[:3] == ["cvt", "rn", "satfinite"] and len(parts) == 5 and parts[3] in FP8 and parts[4] == "f32":
        if len(args) != 3:
            return None
        d, hi, lo = block.dest(args[0], "uint16_t"), block.fvalue(args[1]), block.fvalue(args[2])
        if not (d and hi and lo):
            return None
        fmt = FP8[parts[3]]
        return f"{d} = uint16_t(rocm_compat_fp8({hi}, {fmt}) << 8 | rocm_compat_fp8({lo}, {fmt}));"
    return None
