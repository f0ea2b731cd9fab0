"""CUDA device functions HIP does not declare, with a ROCm form of the same meaning, in the compat header.

- Cache-hinted loads and stores (`__ldcs`, `__ldcg`, `__ldca`, `__ldlu`; `__stcs`, `__stcg`, `__stwb`,
  `__stwt`): the hint only steers caching, so a plain load/store keeps the meaning (the hint is dropped,
  which may cost bandwidth; said in the header). `__ldcv` (re-fetch: a coherence hint) is left out.
- Address-space queries (`__isShared`, `__isLocal`, `__isGlobal`) through the amdgcn builtins, and
  `__cvta_generic_to_shared` as the LDS address (an address-space cast), as on CUDA.
- `__nanosleep(ns)`: `s_sleep 1` (64 clocks, about 30 ns) repeated; CUDA only promises a sleep in [0, 2*ns].
- `__trap()`: `__builtin_trap()` (`s_trap`: the kernel aborts with an error the host sees, as on CUDA);
  `__dp4a` on int/unsigned: the four byte products summed into c, wrapping as CUDA's (plain C, exact).
- Texture/surface fetches are declined: CDNA has no image instructions.
Everything is under `#ifdef USE_ROCM`; nothing changes on CUDA.
"""

from __future__ import annotations

import re

from agent.proposers.rules.base import Decline, Workspace, make_proposal, register
from agent.proposers.rules.compat_header import add_block, compat_view
from agent.proposers.rules.rounding import used_names
from tools.records import Failure, Proposal

SAME = "template <typename T>\nstruct rocm_compat_same {\n  using type = T;\n};\n"
_DEVICE_ONLY = "#ifdef __HIP_DEVICE_COMPILE__\n  return {expr};\n#else\n  return 0;\n#endif\n"
DEFINITIONS = {
    **{
        name: f"template <typename T>\n__device__ inline T {name}(const T* p) {{\n  return *p;\n}}\n"
        for name in ("__ldcs", "__ldcg", "__ldca", "__ldlu")
    },
    **{
        name: (
            f"template <typename T>\n__device__ inline void {name}(T* p, typename rocm_compat_same<T>::type v) "
            "{\n  *p = v;\n}\n"
        )
        for name in ("__stcs", "__stcg", "__stwb", "__stwt")
    },
    "__isShared": "__device__ inline unsigned __isShared(const void* p) {\n"
    + _DEVICE_ONLY.format(expr="__builtin_amdgcn_is_shared(p)")
    + "}\n",
    "__isLocal": "__device__ inline unsigned __isLocal(const void* p) {\n"
    + _DEVICE_ONLY.format(expr="__builtin_amdgcn_is_private(p)")
    + "}\n",
    "__isGlobal": "__device__ inline unsigned __isGlobal(const void* p) {\n"
    + _DEVICE_ONLY.format(expr="!__builtin_amdgcn_is_shared(p) && !__builtin_amdgcn_is_private(p)")
    + "}\n",
    "__cvta_generic_to_shared": (
        "__device__ inline size_t __cvta_generic_to_shared(const void* p) {\n"
        "  return (size_t)(const __attribute__((address_space(3))) void*)p;\n}\n"
    ),
    "__trap": "__device__ inline void __trap(void) {\n  __builtin_trap();\n}\n",
    "__dp4a": (
        "__device__ inline int __dp4a(int a, int b, int c) {\n  unsigned acc = (unsigned)c;\n"
        "  for (int i = 0; i < 32; i += 8) acc += (unsigned)((signed char)(a >> i) * (signed char)(b >> i));\n"
        "  return (int)acc;\n}\n"
        "__device__ inline unsigned __dp4a(unsigned a, unsigned b, unsigned c) {\n"
        "  for (int i = 0; i < 32; i += 8) c += ((a >> i) & 0xffu) * ((b >> i) & 0xffu);\n  return c;\n}\n"
    ),
    "__nanosleep": (
        "__device__ inline void __nanosleep(unsigned ns) {\n"
        "  for (unsigned i = 0; i < ns / 32; ++i) __builtin_amdgcn_s_sleep(1);\n}\n"
    ),
}
NAME = re.compile(r"\b(" + "|".join(DEFINITIONS) + r")\b")
MARK = "// CUDA device functions HIP lacks"
_NO_IMAGES = "The image/texture API not supported on the device"


class DeviceBuiltinFixer:
    """`__ldcs`, `__stcs`, `__isShared`, `__cvta_generic_to_shared`, `__nanosleep` & co undeclared on ROCm."""

    family = "device_builtins"
    kinds: tuple[str, ...] = ("compile_error", "warp_intrinsic")

    def propose(self, failure: Failure, ws: Workspace) -> Proposal | None:
        if _NO_IMAGES in (failure.message or ""):
            raise Decline(
                f"{failure.symbol}: texture/surface fetches need image instructions, which CDNA GPUs (gfx90a, "
                f"gfx942, gfx950) do not have (HIP marks tex*/surf* unavailable on the device); the kernel needs "
                f"plain global loads with its own addressing and filtering, written by hand"
            )
        if failure.symbol not in DEFINITIONS or "undeclared" not in (failure.message or ""):
            return None
        view = compat_view(ws, failure)
        if view is None:
            return None
        rel, text, have = view
        missing = [
            n
            for n in used_names(text, NAME)
            if not re.search(rf"\b{n}\s*\(\s*(?:const|T\*|unsigned|int|void)", have)
        ]
        if not missing:
            return None
        stores = any(n.startswith("__st") for n in missing) and "rocm_compat_same" not in have
        body = [
            f"{MARK}, in a ROCm form of the same meaning (cache hints are dropped: plain loads/stores).\n",
            "#ifdef USE_ROCM\n",
            "#include <hip/hip_runtime.h>\n",
            *([SAME] if stores else []),
            *(DEFINITIONS[n] for n in missing),
            "#endif\n",
        ]
        edits = add_block(ws, rel, "".join(body))
        return make_proposal(
            failure,
            self.family,
            edits,
            (
                f"{rel}: {', '.join(missing)} are CUDA device functions HIP does not declare; the compat header "
                f"defines them under `#ifdef USE_ROCM`: cache-hinted loads/stores as plain ones (the hint only "
                f"steers caching), address-space queries through the amdgcn builtins, __nanosleep as repeated "
                f"s_sleep, __trap as s_trap, __dp4a as four byte products. Nothing changes on CUDA. Compiled, not run."
            ),
            ws=ws,
        )


register(DeviceBuiltinFixer())
