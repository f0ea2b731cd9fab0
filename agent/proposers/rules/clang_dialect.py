"""compiler_dialect: what nvcc accepts and clang's HIP mode rejects, where a ROCm-only fix keeps the meaning.

- `constexpr function never produces a constant expression` (`-Winvalid-constexpr`, an error by default
  in clang): a `constexpr` device function calling a math function that is not constexpr (`1.f / ::log(10.f)`).
  nvcc accepts it and evaluates the call at run time, as clang does once the diagnostic is off; so the
  function (with constexpr neighbours that follow it) is wrapped in a ROCm-only `#pragma clang diagnostic`
  push/ignore/pop. A use in a constant expression still fails on both compilers.
- `::sincos(float, float*, float*)` / `::sincospi`: CUDA's math headers overload them for float in the
  global namespace; HIP declares only the double ones (and `sincosf`), so `::sincos(x, &s, &c)` with floats
  finds no match. The compat header gets the float overloads under `#ifdef USE_ROCM`.
Nothing changes on CUDA.
"""

from __future__ import annotations

import re

from agent.proposers.rules.base import Workspace, make_proposal, register
from agent.proposers.rules.compat_header import add_block, compat_view
from agent.proposers.rules.headers import target_file
from tools.records import Failure, Proposal

NEVER_CONSTANT = "constexpr function never produces a constant expression"
PUSH = (
    '#ifdef USE_ROCM\n#pragma clang diagnostic push\n#pragma clang diagnostic ignored "-Winvalid-constexpr"\n'
    "#endif\n"
)
POP = "#ifdef USE_ROCM\n#pragma clang diagnostic pop\n#endif\n"
_FLOAT_PTR = re.compile(r"no matching function for call to '(sincos|sincospi)'")
SINCOS_MARK = "// CUDA's float overloads of sincos/sincospi"
SINCOS = {
    "sincos": "__device__ inline void sincos(float x, float* s, float* c) { sincosf(x, s, c); }\n",
    "sincospi": "__device__ inline void sincospi(float x, float* s, float* c) { sincospif(x, s, c); }\n",
}


def definition_end(lines: list[str], first: int) -> int | None:
    """Index of the line closing the function whose declaration starts at `first` (None: no body)."""
    depth, opened = 0, False
    for i in range(first, len(lines)):
        code = lines[i].split("//", 1)[0]
        if not opened and ";" in code and "{" not in code:
            return None
        depth += code.count("{") - code.count("}")
        opened = opened or "{" in code
        if opened and depth <= 0:
            return i
    return None


def constexpr_span(lines: list[str], index: int) -> tuple[int, int] | None:
    """(first, last) lines of the constexpr function at `index` and the constexpr functions right after it."""
    if "constexpr" not in lines[index] or "pragma clang diagnostic" in "".join(
        lines[max(0, index - 3) : index]
    ):
        return None
    last = definition_end(lines, index)
    if last is None:
        return None
    while last + 1 < len(lines) and "constexpr" in lines[last + 1]:
        end = definition_end(lines, last + 1)
        if end is None:
            break
        last = end
    return index, last


class ClangDialectFixer:
    """Invalid-constexpr device functions and CUDA's float `::sincos` overloads, fixed for ROCm only."""

    family = "compiler_dialect"
    kinds: tuple[str, ...] = ("compiler_dialect", "compile_error")

    def propose(self, failure: Failure, ws: Workspace) -> Proposal | None:
        message = failure.message or ""
        if NEVER_CONSTANT in message and failure.line:
            return self._constexpr(failure, ws)
        if m := _FLOAT_PTR.search(message):
            return self._sincos(failure, ws, m.group(1))
        return None

    def _constexpr(self, failure: Failure, ws: Workspace) -> Proposal | None:
        rel = target_file(failure)
        text = ws.read(rel)
        if text is None or not failure.line:
            return None
        lines = text.splitlines(keepends=True)
        span = constexpr_span(lines, failure.line - 1) if failure.line <= len(lines) else None
        if span is None:
            return None
        first, last = span
        if not lines[last].endswith("\n"):
            lines[last] += "\n"
        new = "".join([*lines[:first], PUSH, *lines[first : last + 1], POP, *lines[last + 1 :]])
        return make_proposal(
            failure,
            self.family,
            {rel: (text, new)},
            (
                f"{rel}:{failure.line}: a constexpr device function calls a math function that is not constexpr; "
                f"nvcc accepts it and evaluates it at run time, clang rejects it by default (-Winvalid-constexpr). "
                f"The function{'s' if last > first + 3 else ''} get a ROCm-only `#pragma clang diagnostic` "
                f"ignore around them, so clang too evaluates them at run time. Nothing changes on CUDA."
            ),
            ws=ws,
        )

    def _sincos(self, failure: Failure, ws: Workspace, name: str) -> Proposal | None:
        view = compat_view(ws, failure)
        if view is None:
            return None
        rel, _, have = view
        missing = [n for n in SINCOS if f" {n}(float x" not in have]
        if name not in missing:
            return None
        body = f"{SINCOS_MARK} (HIP has sincosf/sincospif).\n#ifdef USE_ROCM\n" + "".join(
            SINCOS[n] for n in missing
        )
        edits = add_block(ws, rel, body + "#endif\n")
        return make_proposal(
            failure,
            self.family,
            edits,
            (
                f"{rel}: `::{name}` is called with floats; CUDA's math headers overload it for float, HIP declares "
                f"only the double one (and {name}f). The compat header adds the float overloads under "
                f"`#ifdef USE_ROCM`, calling {name}f. Nothing changes on CUDA."
            ),
            ws=ws,
        )


register(ClangDialectFixer())
