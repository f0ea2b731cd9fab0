"""Directed-rounding intrinsics (`__fmaf_rd`, `__dadd_ru`, `__fdiv_rz` & co) that hipcc does not declare.

clang's HIP headers define them only under `OCML_BASIC_ROUNDED_OPERATIONS`, a build-line macro a source
file cannot set in time (the wrapper header is read before the file). The device library has the exact
rounded add, sub, mul and fma (`__ocml_fma_rtn_f32` & co, which set the hardware rounding mode around one
instruction), so those become one-line device functions calling it: the same rounding as CUDA. It has no
rounded division, reciprocal or square root; those round to nearest, and the compat header and the
rationale say the last place may differ from CUDA. Everything is under `#ifdef USE_ROCM`.
"""

from __future__ import annotations

import re

from agent.proposers.rules.base import Workspace, make_proposal, register
from agent.proposers.rules.compat_header import add_block, compat_view
from agent.proposers.rules.cpp import line_platforms
from tools.records import Failure, Proposal

# CUDA op -> (device-library op, scalar type, arguments)
OPS = {
    "fadd": ("add", "float", 2),
    "fsub": ("sub", "float", 2),
    "fmul": ("mul", "float", 2),
    "fmaf": ("fma", "float", 3),
    "fdiv": ("div", "float", 2),
    "frcp": ("rcp", "float", 1),
    "fsqrt": ("sqrt", "float", 1),
    "dadd": ("add", "double", 2),
    "dsub": ("sub", "double", 2),
    "dmul": ("mul", "double", 2),
    "fma": ("fma", "double", 3),
    "ddiv": ("div", "double", 2),
    "drcp": ("rcp", "double", 1),
    "dsqrt": ("sqrt", "double", 1),
}
MODES = {"rd": "rtn", "ru": "rtp", "rz": "rtz"}  # CUDA's suffix -> the device library's
EXACT = ("add", "sub", "mul", "fma")
NAME = re.compile(r"\b__(" + "|".join(OPS) + r")_(r[duz])\b")
MARK = "// Directed-rounding intrinsics on ROCm"
ARGS = "xyz"


def definition(name: str) -> str:
    """The ROCm device function for one CUDA directed-rounding intrinsic."""
    op, kind, n = OPS[name[2:-3]]  # `__<op>_<mode>`: a name NAME matched
    params = ", ".join(f"{kind} {a}" for a in ARGS[:n])
    args = ", ".join(ARGS[:n])
    if op in EXACT:
        body = f"__ocml_{op}_{MODES[name[-2:]]}_f{32 if kind == 'float' else 64}({args})"
    else:  # to-nearest: the device library has no directed-rounding division, reciprocal or square root
        nearest = "__" + ("d" if kind == "double" else "f") + {"div": "div", "rcp": "rcp", "sqrt": "sqrt"}[op]
        body = f"{nearest}_rn({args})"
    return f"__device__ inline {kind} {name}({params}) {{\n  return {body};\n}}\n"


def used_names(text: str, pattern: re.Pattern[str] = NAME) -> list[str]:
    """The names `pattern` finds (directed-rounding intrinsics) on the ROCm side of `text`, sorted."""
    lines = text.splitlines()
    rocm = "\n".join(ln for ln, w in zip(lines, line_platforms(lines), strict=True) if w in ("both", "rocm"))
    return sorted({m.group(0) for m in pattern.finditer(rocm)})


def block(names: list[str]) -> str:
    exact = [n for n in names if OPS[n[2:-3]][0] in EXACT]
    nearest = [n for n in names if n not in exact]
    out = [
        f"{MARK}: clang declares them only with OCML_BASIC_ROUNDED_OPERATIONS.\n",
        "#if defined(USE_ROCM) && !defined(OCML_BASIC_ROUNDED_OPERATIONS)\n",
        "#include <hip/hip_runtime.h>\n",
    ]
    if exact:
        out.append("// The device library's rounded add/sub/mul/fma round exactly as CUDA's.\n")
        out += [definition(n) for n in exact]
    if nearest:
        out += [
            "// The device library has no rounded division, reciprocal or square root: these round to\n",
            "// nearest, so the last place may differ from CUDA's directed rounding.\n",
        ]
        out += [definition(n) for n in nearest]
    return "".join(out) + "#endif\n"


class DirectedRoundingFixer:
    """`__fmaf_rd` & co undeclared on ROCm -> device functions in the compat header."""

    family = "rounding"
    kinds: tuple[str, ...] = ("compile_error",)

    def propose(self, failure: Failure, ws: Workspace) -> Proposal | None:
        if not NAME.fullmatch(failure.symbol or "") or "undeclared" not in (failure.message or ""):
            return None
        view = compat_view(ws, failure)
        if view is None:
            return None
        rel, text, have = view
        missing = [n for n in used_names(text) if not re.search(rf"\b{n}\s*\(\s*(?:float|double)\b", have)]
        if not missing:
            return None
        edits = add_block(ws, rel, block(missing))
        nearest = [n for n in missing if OPS[n[2:-3]][0] not in EXACT]
        caveat = (
            f" {', '.join(nearest)} round to nearest (the device library has no directed-rounding division, "
            f"reciprocal or square root): the last place may differ from CUDA."
            if nearest
            else ""
        )
        return make_proposal(
            failure,
            self.family,
            edits,
            (
                f"{rel}: {', '.join(missing)} are CUDA directed-rounding intrinsics hipcc declares only under "
                f"OCML_BASIC_ROUNDED_OPERATIONS; the compat header defines them under `#ifdef USE_ROCM`, the "
                f"rounded add/sub/mul/fma through the device library's exact __ocml_<op>_rt<n|p|z> functions."
                f"{caveat} Nothing changes on CUDA. Compiled, not run."
            ),
            ws=ws,
        )


register(DirectedRoundingFixer())
