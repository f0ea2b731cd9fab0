"""Literal 32-lane assumptions: `% 32`, `& 31`, `0x1f`, `>> 5`, full 32-bit masks, `[32]` extents.

A bare 32 is everywhere in kernels, so a literal is reported only with warp context: the operand is
a lane/warp/thread-index name (`threadIdx.x`, `tid`, `lane_id`, `warp_idx`), or the result is
assigned to a lane/warp name, or the name being defined is a warp size, or the line is about a
mask, or the `__shared__` array is per-warp. Each occurrence is its own finding.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from tools.cpp.preprocessor import Regions, region_name
from tools.cpp.source import SourceText, WordStarts
from tools.records import Failure
from tools.regex_memo import compile_pattern
from tools.scan.catalog import WORD_PREFIXES, Construct
from tools.scan.findings import make_finding
from tools.scan.warp_masks import call_arguments

_SOURCE = Construct(
    "warp_size",
    "warp_size_source",
    "assumes 32 lanes; CDNA wavefronts have 64 (derive it from one warp-size source)",
)
Candidate = tuple[int, str, Construct]
"""(offset, symbol, construct) of one warp-size literal."""
_CONST = Construct("warp_size", "warp_size_source", "warpSize is not a constant expression on ROCm 7+")
_OPERATORS = {"32": ("%", "/"), "31": ("&",), "0x1f": ("&",), "5": (">>",)}
"""Lane arithmetic: the operators that make a warp-size literal of it (`% 32`, `& 31`, `>> 5`)."""
_FOLLOWS_LANE_LITERAL = compile_pattern(r"[ \t]*\.")
_FOLLOWS_DEFINED_32 = compile_pattern(r"[ \t]*[.*/+-]")
_DEFINE_HEAD = compile_pattern(r"[ \t]*#[ \t]*define[ \t]+(\w+)$")
_LANE_TARGET = compile_pattern(r"\b\w*(?:lane|warp|Lane|Warp|LANE|WARP)\w*[ \t]*(?:=(?!=)|\{)")
_WARP_NAME = compile_pattern(
    r"warp_?size|warpsize|threads_?per_?warp|warp_?threads|lanes_?per_?warp", re.IGNORECASE
)
_FULL_MASK = compile_pattern(r"0[xX][fF]{8}(?![0-9a-fA-F])")
_THIRTY_TWO = ("32", "32u", "32U")
_SHARED_32 = compile_pattern(r"__shared__[^;]*?\b(?P<name>\w+)\s*\[\s*(?P<lit>32)\s*\]")
_BRACKET_32 = compile_pattern(r"\[\s*32\s*\]")
_CONST_WARPSIZE = compile_pattern(
    r"\b(?:constexpr|static_assert)\b[^;{]*?\b(?P<lit>warpSize)\b"
    r"|<\s*(?P<targ>warpSize)\s*[,>]"
)
_INDEX_NAMES = {
    "tid",
    "tidx",
    "ltid",
    "lid",
    "thread_id",
    "threadid",
    "thread_idx",
    "threadidx",
    "local_tid",
    "local_id",
    "thread",
    "t_id",
}
_SYNC_CALL = compile_pattern(r"_sync\s*\(|__ballot|__activemask")
_WINDOW = 160


def _warp_operand(name: str) -> bool:
    low = name.lower()
    return (
        low in _INDEX_NAMES
        or "lane" in low
        or "warp" in low
        or low.endswith("_tid")
        or low.startswith("tid_")
    )


def _operand_before(text: str) -> str:
    """The operand ending `text`: an identifier, or `threadIdx.x` with its member."""
    text = text.rstrip()
    end = len(text)
    while end and (text[end - 1].isalnum() or text[end - 1] == "_"):
        end -= 1
    word = text[end:]
    head = text[:end].rstrip()
    if word in ("x", "y", "z") and head.endswith(".") and head[:-1].rstrip().endswith("threadIdx"):
        return "threadIdx." + word
    return word


def _line(masked: str, pos: int) -> tuple[str, int]:
    start = masked.rfind("\n", 0, pos) + 1
    end = masked.find("\n", pos)
    return (masked[start:] if end < 0 else masked[start:end]), start


def _lane_literals(masked: str, found: WordStarts) -> list[tuple[int, int, str, str]]:
    """(operator offset, literal offset, operator, literal) of every `% 32`, `/ 32`, `& 31`,
    `& 0x1f` and `>> 5` (a `u` suffix allowed, no `.` after it), in offset order: the number word
    found by the file's word search, then the operator before it past blanks."""
    out = []
    for word, starts in found.items():
        literal = word[:-1] if word[-1] in "uU" else word
        operators = _OPERATORS.get(literal.lower() if literal[:2] in ("0x", "0X") else literal)
        if operators is None:
            continue
        for start in starts:
            if _FOLLOWS_LANE_LITERAL.match(masked, start + len(word)):
                continue
            j = start - 1
            while j >= 0 and masked[j] in " \t":
                j -= 1
            if j < 0:
                continue
            if ">>" in operators and masked[j] == ">" and j and masked[j - 1] == ">":
                out.append((j - 1, start, ">>", literal))
            elif masked[j] in operators:
                out.append((j, start, masked[j], literal))
    out.sort()
    return out


def _lane_arithmetic(masked: str, found: WordStarts) -> Iterator[Candidate]:
    for op_at, at, op, literal in _lane_literals(masked, found):
        window = masked[max(0, op_at - _WINDOW) : op_at]
        operand = _operand_before(window)
        if operand.startswith("threadIdx.") or (operand and _warp_operand(operand)):
            yield at, f"{op} {literal}", _SOURCE
            continue
        statement = window[max(window.rfind(";"), window.rfind("{"), window.rfind("}")) + 1 :]
        if _LANE_TARGET.search(statement):
            yield at, f"{op} {literal}", _SOURCE


def _warp_size_definitions(masked: str, found: WordStarts) -> Iterator[Candidate]:
    """`#define WARP_SIZE 32`, `constexpr int kWarpSize = 32`, `int warp_size{32}`: plain string
    checks first, because a 32 is on almost every other line of a kernel."""
    for pos, end in sorted((p, p + len(word)) for word in _THIRTY_TWO for p in found.get(word, ())):
        if (pos and masked[pos - 1] == ".") or _FOLLOWS_DEFINED_32.match(masked, end):
            continue
        before = masked[max(0, pos - _WINDOW) : pos].rstrip(" \t(")
        if not before:
            continue
        last = before[-1]
        if last in "={":
            if last == "=" and len(before) > 1 and before[-2] in "=!<>+-*/%&|^":
                continue
            name = _operand_before(before[:-1])
        elif last.isalnum() or last == "_":
            head = _DEFINE_HEAD.match(before, before.rfind("\n") + 1)
            name = head.group(1) if head else ""
        else:
            continue
        if name and _WARP_NAME.search(name):
            yield pos, name, _SOURCE


def _full_masks(found: WordStarts) -> list[tuple[int, str]]:
    """(offset, 0xffffffff lowercased) of each full 32-bit mask word (no hex digit after it)."""
    out: list[tuple[int, str]] = []
    for word, starts in found.items():
        m = _FULL_MASK.match(word) if word[:2] in ("0x", "0X") else None
        if m:
            out.extend((start, m.group(0).lower()) for start in starts)
    out.sort()
    return out


def _candidates(src: SourceText) -> Iterator[Candidate]:
    """(offset, symbol, construct) for every warp-size literal with warp context."""
    masked, found = src.masked, src.words(WORD_PREFIXES)
    yield from _lane_arithmetic(masked, found)
    yield from _warp_size_definitions(masked, found)
    for start, symbol in _full_masks(found):
        line, _ = _line(masked, start)
        if "mask" in line.lower() and not _SYNC_CALL.search(line):
            yield start, symbol, _SOURCE
    if "32" in found:
        per_warp_file = None
        for m in shared_per_warp_arrays(masked, found["32"]):
            name = m.group("name")
            if per_warp_file is None:
                per_warp_file = "__shfl" in masked
            if per_warp_file or "warp" in name.lower() or "lane" in name.lower():
                yield m.start("lit"), f"{name}[32]", _SOURCE
    if "warpSize" in found:  # the pattern reads it as a whole word
        for pos in const_warpsize_uses(masked):
            yield pos, "warpSize", _CONST


def shared_per_warp_arrays(masked: str, thirty_twos: list[int]) -> Iterator[re.Match[str]]:
    """What _SHARED_32.finditer(masked) yields, given the offsets of the word `32` (increasing).
    A match holds a `[32]` and no ';', so none starts before the statement of the first bracketed
    32 (a file without one is done without a search); after it, the pattern is tried only at a
    `__shared__` whose statement holds a `[32]` (its lazy scan would otherwise try every
    character of every declaration)."""
    first = next((p for p in thirty_twos if _in_brackets(masked, p, p + 2)), None)
    if first is None:
        return
    pos = masked.rfind(";", 0, first) + 1
    while (at := masked.find("__shared__", pos)) >= 0:
        end = masked.find(";", at)
        m = (
            _SHARED_32.match(masked, at)
            if _BRACKET_32.search(masked, at, len(masked) if end < 0 else end)
            else None
        )
        if m:
            yield m
            pos = m.end()
        else:
            pos = at + 1


def _in_brackets(masked: str, start: int, end: int) -> bool:
    """masked[start:end] is the only thing between '[' and ']' but blanks (`\\[\\s*...\\s*\\]`)."""
    before = start - 1
    while before >= 0 and masked[before].isspace():
        before -= 1
    after = end
    while after < len(masked) and masked[after].isspace():
        after += 1
    return before >= 0 and masked[before] == "[" and after < len(masked) and masked[after] == "]"


def const_warpsize_uses(masked: str) -> Iterator[int]:
    """Offsets of `warpSize` where _CONST_WARPSIZE.finditer would report it. That pattern has no
    literal prefix (the engine would test every character of the file), but a match never crosses
    ';' or '{' and ends at a `warpSize` (plus blanks and one character): so it is searched only in
    the stretch from the statement start to each occurrence."""
    pos, at = 0, masked.find("warpSize")
    while at >= 0:
        if at >= pos:
            start = max(pos, masked.rfind(";", pos, at) + 1, masked.rfind("{", pos, at) + 1)
            end = at + len("warpSize")
            while end < len(masked) and masked[end].isspace():
                end += 1
            m = _CONST_WARPSIZE.search(masked[start : end + 1])
            if m:
                yield start + (m.start("lit") if m.group("lit") else m.start("targ"))
                pos = start + m.end()
        at = masked.find("warpSize", at + 1)


# Anchored on the literal "__" (no leading \b) so the engine can skip to candidates.
_LANE_SENSITIVE = compile_pattern(r"__(shfl(?:_up|_down)?(?:_sync)?|ballot(?:_sync)?|activemask)[ \t]*\(")
_WIDTH_ARG = {
    "__shfl": 3,
    "__shfl_up": 3,
    "__shfl_down": 3,
    "__shfl_sync": 4,
    "__shfl_up_sync": 4,
    "__shfl_down_sync": 4,
}
"""Argument count at which a shuffle names its width: with it, 32-lane groups stay 32-lane on ROCm."""
_NEAR_LINES = 40


def lane_sensitive_lines(masked: str, regions: Regions) -> list[int]:
    """Offsets of cross-lane operations whose result depends on the wavefront being 32 lanes: a
    shuffle that does not name its width (XOR shuffles below 32 stay within 32 lanes and are left
    out), a ballot or an active mask (64 bits on ROCm)."""
    out = []
    for m in _LANE_SENSITIVE.finditer(masked):
        name = "__" + m.group(1)
        if not regions.shared_code(m.start()):
            continue
        width_at = _WIDTH_ARG.get(name)
        if width_at is None or len(call_arguments(masked, m.end() - 1)) < width_at:
            out.append(m.start())
    return out


def warp_size_findings(src: SourceText, regions: Regions) -> list[Failure]:
    """One finding per warp-size literal the ROCm build compiles. `near_collective`: a lane-width
    sensitive cross-lane operation is within 40 lines, so the literal may be a real 32-vs-64 bug
    rather than a 32-lane logical group (which is correct on a 64-lane wavefront)."""
    seen: set[int] = set()
    out = []
    sensitive = None
    for pos, symbol, construct in _candidates(src):
        if pos in seen or not regions.shared_code(pos):
            continue
        seen.add(pos)
        if sensitive is None:
            sensitive = [src.line_col(p)[0] for p in lane_sensitive_lines(src.masked, regions)]
        line = src.line_col(pos)[0]
        out.append(
            make_finding(
                src,
                pos,
                construct,
                symbol,
                f"warp-size literal `{symbol}`: {construct.note}",
                region=region_name(*regions.at(pos)),
                per_occurrence=True,
                facts={"near_collective": any(abs(line - s) <= _NEAR_LINES for s in sensitive)},
            )
        )
    return out
