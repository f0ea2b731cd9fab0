"""NVIDIA's fp8 types (OCP e4m3/e5m2) on ROCm as a byte with CUDA's conversions, in the compat header.

gfx942 (MI300) has FNUZ fp8 only: another exponent bias, a range of +-240 for e4m3 (OCP: +-448), no
infinities, and 0x80 as NaN, so a typedef to HIP's FNUZ types changes results (values past 240 saturate,
the smallest values round differently) and every byte exchanged with CUDA-encoded data (an e4m3fn
checkpoint, a torch.float8_e4m3fn tensor) means something else; ROCm 6.4's OCP types convert on the host
and gfx950 only. So `__nv_fp8_e4m3`/`__nv_fp8_e5m2` become one struct on every target and pass: the OCP
byte, built with the encoder of the fp8 `cvt` PTX translation (round to nearest even, satfinite, NaN ->
0x7f, as CUDA's constructors) and read back exactly. The fp8 vector types and the `__nv_cvt_*` intrinsics
are not mapped (declined by name).
"""

from __future__ import annotations

from agent.proposers.rules.base import Workspace, make_proposal
from agent.proposers.rules.compat_header import add_block, compat_text
from agent.proposers.rules.ptx_float import FP8_HELPERS
from tools.records import Failure, Proposal

SCALARS = ("__nv_fp8_e4m3", "__nv_fp8_e5m2", "__nv_fp8_storage_t")
MARK = "// OCP fp8 (NVIDIA's __nv_fp8_e4m3/__nv_fp8_e5m2) on ROCm"
_ENCODE = FP8_HELPERS["rocm_compat_fp8"].replace(
    "__device__ inline uint32_t rocm_compat_fp8(",
    "__host__ __device__ inline uint32_t rocm_compat_fp8_ocp_encode(",
)
SHIM = f"""\
{MARK}: gfx942's own fp8 is FNUZ (other bias, range and NaN), so the CUDA types
// are the OCP byte on every target, converted as CUDA converts (nearest even, satfinite) and read back exactly.
#ifdef USE_ROCM
#include <hip/hip_runtime.h>
#include <hip/hip_bf16.h>
#include <hip/hip_fp16.h>
#include <cstdint>
{_ENCODE}// The exact value of an OCP fp8 code (e4m3: S.1111.111 is NaN; e5m2: exponent 31 is inf/NaN).
__host__ __device__ inline float rocm_compat_fp8_ocp_decode(uint32_t code, int mant, int bias) {{
  const uint32_t mag = code & 0x7fu, e = mag >> mant, m = mag & ((1u << mant) - 1u);
  float v;
  if ((mant == 3 && mag == 0x7fu) || (mant == 2 && e == 31u && m)) {{
    v = __builtin_nanf("");
  }} else if (mant == 2 && e == 31u) {{
    v = __builtin_inff();
  }} else {{
    const int k = int(e ? e : 1u) - bias - mant;  // the code's value is (m, with the implicit bit if normal) * 2^k
    v = float(e ? (m | (1u << mant)) : m) * __builtin_bit_cast(float, uint32_t(k + 127) << 23);
  }}
  return (code & 0x80u) ? -v : v;
}}
template <int Mant, int Bias, uint32_t MaxCode>
struct rocm_compat_fp8_ocp {{
  uint8_t __x;
  rocm_compat_fp8_ocp() = default;
  __host__ __device__ explicit rocm_compat_fp8_ocp(float f)
      : __x(uint8_t(rocm_compat_fp8_ocp_encode(f, Mant, Bias, MaxCode))) {{}}
  __host__ __device__ explicit rocm_compat_fp8_ocp(__half h) : rocm_compat_fp8_ocp(__half2float(h)) {{}}
  __host__ __device__ explicit rocm_compat_fp8_ocp(__hip_bfloat16 h) : rocm_compat_fp8_ocp(__bfloat162float(h)) {{}}
  __host__ __device__ explicit operator float() const {{ return rocm_compat_fp8_ocp_decode(__x, Mant, Bias); }}
  // every fp8 value is exact in half and in bf16
  __host__ __device__ explicit operator __half() const {{ return __float2half(float(*this)); }}
  __host__ __device__ explicit operator __hip_bfloat16() const {{ return __float2bfloat16(float(*this)); }}
}};
typedef rocm_compat_fp8_ocp<3, 7, 0x7eu> __nv_fp8_e4m3;
typedef rocm_compat_fp8_ocp<2, 15, 0x7bu> __nv_fp8_e5m2;
typedef uint8_t __nv_fp8_storage_t;
#endif
"""


def fp8_proposal(failure: Failure, ws: Workspace, rel: str, names: list[str]) -> Proposal | None:
    """The compat header's OCP fp8 shim for the scalar names a file uses (None when it is there already)."""
    edits = add_block(ws, rel, None if MARK in compat_text(ws, rel) else SHIM)
    if not edits:
        return None
    return make_proposal(
        failure,
        "types",
        edits,
        (
            f"{rel}: {', '.join(names)} keep NVIDIA's OCP encoding on ROCm: gfx942's fp8 is FNUZ (bias 8, +-240, "
            f"0x80 NaN), so HIP's types would change values and bytes. The compat header defines them under "
            f"`#ifdef USE_ROCM` as the OCP byte, converted as CUDA's constructors convert (nearest even, "
            f"satfinite, NaN -> 0x7f) and read back exactly (to float, half, bf16). Conversions run in software "
            f"on every target. Nothing changes on CUDA."
        ),
        ws=ws,
    )
