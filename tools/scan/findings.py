"""Turning one matched construct into a `Failure` with a stable signature."""

from __future__ import annotations

from tools.cpp.source import SourceText
from tools.digests import sha1
from tools.records import Failure
from tools.scan.catalog import Construct

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (tools/__init__.py)
if TYPE_CHECKING:
    from typing import Any

SOURCE = "scan"
_UNIT_SUFFIXES = (".cu", ".cc", ".cpp", ".cxx", ".c", ".py")


def line_key(line: str) -> str:
    """A short hash of a source line with whitespace collapsed: survives edits elsewhere in the file."""
    collapsed = " ".join(line.split()).encode("utf-8", "surrogatepass")
    return sha1(collapsed, usedforsecurity=False).hexdigest()[:10]


def make_finding(
    src: SourceText,
    offset: int,
    construct: Construct,
    symbol: str,
    message: str,
    *,
    region: str,
    per_occurrence: bool = False,
    facts: dict[str, Any] | None = None,
) -> Failure:
    """A scan finding at `offset`. Per-occurrence findings get the line's hash in their signature
    because one file may hold many of them; the signature never holds a line number."""
    line, column, text = src.place(offset)
    signature = f"{construct.kind}:{src.path}:{symbol}"
    if per_occurrence:
        signature += f"@{line_key(text)}"
    all_facts = {"fix_family": construct.fix_family, "region": region, "why": construct.note}
    if construct.hip_equivalent:
        all_facts["hip_equivalent"] = construct.hip_equivalent
    if src.path.endswith(_UNIT_SUFFIXES):
        all_facts["unit"] = src.path
    all_facts.update(facts or {})
    return Failure(
        kind=construct.kind,
        message=message,
        file=src.path,
        line=line,
        column=column,
        symbol=symbol,
        excerpt=text.strip()[:300],
        signature=signature,
        source=SOURCE,
        facts=all_facts,
    )


def sort_key(f: Failure) -> tuple[str, int, int, str, str]:
    return (f.file or "", f.line or 0, f.column or 0, f.kind, f.symbol or "")


def dedupe_signatures(findings: list[Failure]) -> list[Failure]:
    """Sort findings and make signatures unique: a repeat of the same line text gets `~2`, `~3`."""
    findings.sort(key=sort_key)
    seen: dict[str, int] = {}
    for f in findings:
        n = seen.get(f.signature, 0) + 1
        seen[f.signature] = n
        if n > 1:
            f.signature = f"{f.signature}~{n}"
    return findings
