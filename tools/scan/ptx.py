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
from tools.regex_memo import compile_pattern
from tools.scan.catalog import TENSOR_CORE_PTX, WORD_PREFIXES, is_ptx, ptx_construct
from tools.scan.findings import make_finding

# Matched from `asm` (after a leading `__`), at the words _asm_statements finds.
_ASM = compile_pattern(r"asm(?:__)?\b(?:\s|volatile\b|__volatile__\b|goto\b|inline\b)*\(")
_ASM_WORDS = ("asm", "asm__", "__asm", "__asm__")
_STRING = compile_pattern(r'"((?:[^"\\\n]|\\.)*)"')
_OPCODE = compile_pattern(r"^(?:@!?%?\w+\s+)?([a-z][\w.:]*)")
_MAX_STATEMENT = 8000


_PAREN = compile_pattern(r"[()]")
_PIECES = compile_pattern(r"[;\n{}]")
_LABEL = compile_pattern(r"^\s*\w+:\s*")


def _closing_paren(masked: str, open_at: int) -> int:
    """Offset of the ')' closing the '(' at `open_at`, or where the search gives up (8,000
    characters on, or the end): parentheses are visited, not every character."""
    depth, end = 0, min(len(masked), open_at + _MAX_STATEMENT)
    for m in _PAREN.finditer(masked, open_at, end):
        if m.group() == "(":
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return m.start()
    return end


def ptx_opcodes(template: str) -> list[str]:
    """The instruction opcodes of a PTX template (directives like `.reg` and labels skipped)."""
    text = template.replace("\\n", "\n").replace("\\t", " ")
    out = []
    for piece in _PIECES.split(text):
        piece = _LABEL.sub("", piece.strip())
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


def _asm_statements(src: SourceText) -> list[re.Match[str]]:
    """`asm`, `__asm`, `asm__` or `__asm__` as a whole word, then `(` past qualifiers, in offset
    order (the match starts at `asm`). From the file's word search: a file without one is skipped
    without a pass over its text."""
    masked, found = src.masked, src.words(WORD_PREFIXES)
    heads = sorted(start for word in _ASM_WORDS for start in found.get(word, ()))
    matches = (_ASM.match(masked, start + 2 if masked.startswith("__", start) else start) for start in heads)
    return [m for m in matches if m]


def inline_asm_findings(src: SourceText, regions: Regions) -> list[Failure]:
    """One finding per inline-asm statement the ROCm build compiles."""
    out = []
    for m in _asm_statements(src):
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
