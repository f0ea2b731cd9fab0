"""C/C++/CUDA constructs a ROCm build trips on, matched on the masked text of one file.

Headers and literal warp-size uses are reported per occurrence (each needs its own edit);
identifiers (intrinsics, types, API names) once per file and symbol, with every line listed in
`facts["lines"]`, because one compat typedef or macro fixes them all.
"""

from __future__ import annotations

from bisect import bisect_right

from tools.cpp.preprocessor import Regions, region_name
from tools.cpp.source import SourceText
from tools.records import Failure
from tools.regex_memo import compile_pattern
from tools.scan.blockers import algorithm_findings, library_findings
from tools.scan.catalog import (
    IDENTIFIER_PREFIXES,
    IDENTIFIER_RE,
    WORD_PREFIXES,
    Construct,
    classify_header,
    identifier_construct,
)
from tools.scan.findings import make_finding
from tools.scan.ptx import inline_asm_findings
from tools.scan.warp_masks import HIP_LACKS, first_argument, mask_bits
from tools.scan.warp_size import warp_size_findings

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (tools/__init__.py)
if TYPE_CHECKING:
    from typing import Any

# After a CUDA-named identifier: it is being defined (a helper function), not used.
_FUNC_DEF_AFTER = compile_pattern(r"\s*\([^;{)]*\)\s*(?:const\s*)?\{")
_USING_BEFORE = compile_pattern(r"\busing\s+$")
_TYPEDEF = compile_pattern(r"\btypedef\b")
MAX_LINES_LISTED = 50


def _directive_line(masked: str, offset: int) -> str | None:
    """The directive name when `offset` sits on a preprocessor line, else None."""
    start = masked.rfind("\n", 0, offset) + 1
    head = masked[start:offset].lstrip()
    if not head.startswith("#"):
        return None
    return head[1:].lstrip().split(" ", 1)[0].split("(", 1)[0]


def _defines_here(masked: str, start: int, end: int) -> bool:
    """True when the name at start:end is being defined: `using N =`, `typedef ... N;`, `N(...) {`."""
    following = masked[end : end + 2].lstrip()[:1]
    if following == "=":
        return bool(_USING_BEFORE.search(masked, max(0, start - 16), start))
    if following == ";":
        statement_start = (
            max(
                masked.rfind(";", 0, start),
                masked.rfind("{", 0, start),
                masked.rfind("}", 0, start),
            )
            + 1
        )
        return bool(_TYPEDEF.search(masked, statement_start, start))
    # `N(...) {` needs '(' first after blanks: most uses (`cudaStream_t s`) are settled here.
    return (not following or following == "(") and bool(_FUNC_DEF_AFTER.match(masked, end))


def header_findings(src: SourceText, regions: Regions) -> list[Failure]:
    out = []
    for inc in regions.includes:
        if inc.rocm is False:  # a CUDA header even in a ROCm-only branch is a certain error
            continue
        construct = classify_header(inc.header)
        if construct is None:
            continue
        written = f"<{inc.header}>" if inc.angled else f'"{inc.header}"'
        out.append(
            make_finding(
                src,
                inc.offset - 1,
                construct,
                inc.header,
                f"#include {written} is compiled by the ROCm build: {construct.note}",
                region=region_name(inc.rocm, inc.cuda),
                per_occurrence=True,
            )
        )
    return out


def identifier_findings(src: SourceText, regions: Regions) -> tuple[list[Failure], set[str]]:
    """One finding per CUDA identifier per file, at its first ROCm-compiled use; and the CUDA-named
    identifiers the file itself defines for the ROCm build (compat macros, typedefs, helpers)."""
    masked = src.masked
    uses: dict[str, list[int]] = {}
    # Only CUDA-named ones are returned (see the end): the prefix test spares the rest a lookup.
    provides = {
        name
        for name, pos in regions.defines
        if name.startswith(IDENTIFIER_PREFIXES) and regions.rocm_compiles(pos)
    }
    constructs: dict[str, Construct] = {}
    candidates: list[tuple[int, str]] = []
    for word, starts in src.words(WORD_PREFIXES).items():
        construct = identifier_construct(word)
        if construct is not None:  # names the scanner does not report never reach the loop below
            constructs[word] = construct
            candidates.extend((start, word) for start in starts)
    candidates.sort()
    narrow: dict[str, list[int]] = {}
    """Warp-intrinsic uses whose mask is 32-bit in the ROCm build: a certain compile error."""
    in_order: list[int] = []
    starts_at, states = regions.starts, regions.states
    for pos, name in candidates:
        rocm, cuda = states[bisect_right(starts_at, pos) - 1]  # regions.at(pos), inlined
        if rocm is False:  # the ROCm build skips it
            continue
        line_start = masked.rfind("\n", 0, pos) + 1
        directive = _directive_line(masked, pos) if masked.find("#", line_start, pos) >= 0 else None
        if directive is not None and directive != "define":
            continue
        end = pos + len(name)
        if directive is None and _defines_here(masked, pos, end):
            provides.add(name)
        if cuda is not False:  # shared code; the ROCm-only branch is the project's own ROCm code
            uses.setdefault(name, []).append(pos)
            in_order.append(pos)
            if (
                constructs[name].kind == "warp_intrinsic"
                and masked.startswith("(", end)
                and mask_bits(first_argument(masked, end), regions) == 32
            ):
                narrow.setdefault(name, []).append(pos)
    line_of = dict(zip(in_order, src.lines_at(in_order), strict=True))
    out = []
    for name, positions in uses.items():
        construct = constructs[name]
        line_numbers = sorted({line_of[p] for p in positions})
        out.append(
            make_finding(
                src,
                positions[0],
                construct,
                name,
                f"{name} outside a ROCm branch: {construct.note}",
                region=region_name(*regions.at(positions[0])),
                facts={
                    "occurrences": len(positions),
                    "lines": line_numbers[:MAX_LINES_LISTED],
                    **_mask_facts(line_of, name, narrow),
                },
            )
        )
    return out, {n for n in provides if IDENTIFIER_RE.fullmatch(n)}


def _mask_facts(line_of: dict[int, int], name: str, narrow: dict[str, list[int]]) -> dict[str, Any]:
    if name in HIP_LACKS:
        return {"certain": True}
    if name in narrow:
        return {"certain": True, "mask32_lines": sorted({line_of[p] for p in narrow[name]})}
    return {}


def cpp_findings(src: SourceText, regions: Regions) -> tuple[list[Failure], set[str]]:
    """Every CUDA-only construct the ROCm build would compile in this file, and the CUDA names the
    file defines for ROCm (see identifier_findings)."""
    identifiers, provides = identifier_findings(src, regions)
    findings = (
        header_findings(src, regions)
        + library_findings(src, regions)
        + identifiers
        + algorithm_findings(src, regions)
        + warp_size_findings(src, regions)
        + inline_asm_findings(src, regions)
    )
    return findings, provides
