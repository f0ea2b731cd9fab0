"""Inline PTX: `asm volatile("...")` statements whose strings hold PTX instructions.

The `asm` keyword is found on the masked text (so comments never count); its string operands are
read back from the raw text, because the PTX lives inside string literals. An empty asm (a compiler
barrier such as `asm volatile("" ::: "memory")`) is valid on AMD and is not reported.
"""

from __future__ import annotations

import re

from tools.cpp.preprocessor import Regions, region_name
from tools.cpp.source import SourceText
from tools.records import Failure
from tools.scan.catalog import TENSOR_CORE_PTX, is_ptx, ptx_construct
from tools.scan.findings import make_finding

# Anchored on the literal "asm" (fast search); the `__` around it and the word start are checked after.
_ASM = re.compile(r"asm(?:__)?\b(?:\s|volatile\b|__volatile__\b|goto\b|inline\b)*\(")
_STRING = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
_OPCODE = re.compile(r"^(?:@!?%?\w+\s+)?([a-z][\w.:]*)")
_MAX_STATEMENT = 8000


def _closing_paren(masked: str, open_at: int) -> int:
    depth, end = 0, min(len(masked), open_at + _MAX_STATEMENT)
    for i in range(open_at, end):
        ch = masked[i]
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i
    return end


def ptx_opcodes(template: str) -> list[str]:
    """The instruction opcodes of a PTX template (directives like `.reg` and labels skipped)."""
    text = template.replace("\\n", "\n").replace("\\t", " ")
    out = []
    for piece in re.split(r"[;\n{}]", text):
        piece = re.sub(r"^\s*\w+:\s*", "", piece.strip())
        m = _OPCODE.match(piece)
        if m:
            out.append(m.group(1))
    return out


def _statement_opcodes(src: SourceText, open_at: int) -> tuple[list[str], bool]:
    close = _closing_paren(src.masked, open_at)
    segment = src.raw[open_at:close]
    colon = src.masked.find(":", open_at, close)
    template_end = (colon - open_at) if colon >= 0 else len(segment)
    strings = [m.group(1) for m in _STRING.finditer(segment, 0, template_end)]
    template = "".join(strings)
    return ptx_opcodes(template), bool(template.strip()) or not strings


def inline_asm_findings(src: SourceText, regions: Regions) -> list[Failure]:
    """One finding per inline-asm statement the ROCm build compiles."""
    if "asm" not in src.masked:
        return []
    out = []
    masked = src.masked
    for m in _ASM.finditer(masked):
        start = m.start() - 2 if masked.startswith("__", max(0, m.start() - 2)) else m.start()
        if start and (masked[start - 1].isalnum() or masked[start - 1] == "_"):
            continue
        if not regions.shared_code(m.start()):
            continue
        opcodes, has_code = _statement_opcodes(src, m.end() - 1)
        if not has_code or (opcodes and not is_ptx(opcodes)):
            continue
        judged = [op for op in opcodes if op.startswith(TENSOR_CORE_PTX)]
        symbol = (judged or opcodes or ["asm"])[0]
        construct = ptx_construct(symbol)
        out.append(
            make_finding(
                src,
                m.start(),
                construct,
                symbol,
                f"inline PTX `{symbol}`: {construct.note}",
                region=region_name(*regions.at(m.start())),
                per_occurrence=True,
                facts={"opcodes": sorted(set(opcodes)), "judgment": bool(judged)},
            )
        )
    return out
