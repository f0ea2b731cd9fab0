"""Inline PTX with a known ROCm form, rewritten under `#ifdef USE_ROCM` with the CUDA statement untouched.

Known forms: `mov.u32 %0, %%laneid` -> `__lane_id()`; `mov.b32` between a float and a 32-bit register ->
`__float_as_uint` / `__uint_as_float`; a single-register global load with a cache hint -> a plain load
(`.cs`/`.lu`, evict-first streaming, -> a nontemporal load; `ld.volatile` -> a volatile load).
Other straight-line PTX goes through `ptx_translate` (setp/mov/predicated loads/lop3/prmt); anything
else is left alone (the caller declines it with a reason).
"""

from __future__ import annotations

import re

from agent.proposers.rules.cpp import line_platforms
from agent.proposers.rules.ptx_arch import matching_paren, newer_branch
from agent.proposers.rules.ptx_translate import translate

_ASM = re.compile(r"^([ \t]*)asm\b\s*(?:volatile\b|__volatile__\b)?\s*\(", re.MULTILINE)
_OPERAND = re.compile(r'"([=+&]*)(\w)"\s*\((.*)\)\s*$', re.DOTALL)
TYPES = {
    "u32": "uint32_t",
    "s32": "int32_t",
    "b32": "uint32_t",
    "f32": "float",
    "u64": "uint64_t",
    "s64": "int64_t",
    "b64": "uint64_t",
    "f64": "double",
    "u16": "uint16_t",
    "s16": "int16_t",
    "b16": "uint16_t",
}
_LOAD = re.compile(
    r"^ld\.(volatile\.)?global(?:\.(nc|ca|cg|cs|lu|cv))?(?:\.L1::\w+)?(?:\.L2::\w+)?\.(\w+) "
    r"%0, \[%1\];?$"
)


def _split_top(text: str, sep: str) -> list[str]:
    """Split at `sep` outside strings and brackets."""
    parts: list[str] = []
    cur: list[str] = []
    depth, quote = 0, False
    for i, ch in enumerate(text):
        if ch == '"' and (i == 0 or text[i - 1] != "\\"):
            quote = not quote
        elif not quote and ch in "([{":
            depth += 1
        elif not quote and ch in ")]}":
            depth -= 1
        elif not quote and depth == 0 and ch == sep:
            parts.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    return [*parts, "".join(cur)]


def _operands(part: str) -> list[tuple[str, str]]:
    """(constraint letter, expression) per operand of one asm operand list."""
    out = []
    for op in _split_top(part, ","):
        m = _OPERAND.match(op.strip())
        if op.strip() and not m:
            return []
        if m:
            out.append((m.group(2), m.group(3).strip()))
    return out


def rocm_form(template: str, outs: list[tuple[str, str]], ins: list[tuple[str, str]]) -> str | None:
    """The ROCm statement for a known PTX form, or None."""
    ptx = " ".join(template.replace("\\n", " ").replace("\\t", " ").split()).rstrip(";").strip()
    if ptx == "mov.u32 %0, %%laneid" and len(outs) == 1 and not ins:
        return f"{outs[0][1]} = __lane_id();"
    if ptx == "mov.b32 %0, %1" and len(outs) == 1 and len(ins) == 1:
        cast = {("r", "f"): "__float_as_uint", ("f", "r"): "__uint_as_float"}.get((outs[0][0], ins[0][0]))
        return f"{outs[0][1]} = {cast}({ins[0][1]});" if cast else None
    load = _LOAD.match(ptx)
    if load and len(outs) == 1 and len(ins) == 1 and ins[0][0] == "l" and load.group(3) in TYPES:
        ctype = TYPES[load.group(3)]
        if load.group(1):
            return f"{outs[0][1]} = *reinterpret_cast<const volatile {ctype}*>({ins[0][1]});"
        if load.group(2) in ("cs", "lu"):
            return (
                f"{outs[0][1]} = __builtin_nontemporal_load(reinterpret_cast<const {ctype}*>({ins[0][1]}));"
            )
        return f"{outs[0][1]} = *reinterpret_cast<const {ctype}*>({ins[0][1]});"
    lines = translate(ptx, outs, ins)
    return "\n".join(lines) if lines else None


def _statement_form(text: str, m: re.Match[str], close: int) -> str | None:
    """The ROCm form of the asm statement whose match is `m` and whose operands close at `close`, or None."""
    parts = _split_top(text[m.end() : close], ":")
    if len(parts) > 4:
        return None
    strings = re.findall(r'"((?:\\.|[^"\\])*)"', parts[0])
    return rocm_form(
        "".join(strings),
        _operands(parts[1]) if len(parts) > 1 else [],
        _operands(parts[2]) if len(parts) > 2 else [],
    )


def rewrite_known_ptx(text: str) -> tuple[str, list[str]]:
    """Every known-form asm statement both toolchains compile, put in the CUDA branch of a new guard; one in
    the pre-sm_N `#else` of an architecture branch gets the form of the sm_N branch's statement (ptx_arch)."""
    where = line_platforms(text.splitlines())
    edits, done = [], []
    for m in _ASM.finditer(text):
        close = matching_paren(text, m.end() - 1)
        semi = text.find(";", close) if close > 0 else -1
        line_end = text.find("\n", semi) % (len(text) + 1) if semi > 0 else 0
        if close < 0 or semi < 0 or text[close + 1 : semi].strip() or text[semi + 1 : line_end].strip():
            continue
        if where[text.count("\n", 0, m.start())] != "both":
            continue
        form, note = _statement_form(text, m, close), ""
        newer = newer_branch(text, m.start(), semi + 1)
        if newer is not None:
            other = _ASM.match(text, newer[0])
            newer_form = (
                _statement_form(text, other, matching_paren(text, other.end() - 1)) if other else None
            )
            if newer_form is not None:
                form, note = newer_form, " (as in the newer __CUDA_ARCH__ branch: ROCm compiles its #else)"
        if form is None:
            continue
        indent = m.group(1)
        stmt = text[m.start() : semi + 1]
        rocm = "\n".join(indent + ln for ln in form.splitlines())
        edits.append((m.start(), semi + 1, f"#ifdef USE_ROCM\n{rocm}\n#else\n{stmt}\n#endif"))
        done.append((form.splitlines()[0] if "\n" not in form else "a straight-line PTX block as C++") + note)
    for start, end, new in reversed(edits):
        text = text[:start] + new + text[end:]
    return text, done
