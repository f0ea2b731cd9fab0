"""Turn parser records into Failures: repo-relative paths, signatures, merging, bounds.

The same header error reached from fifty translation units is one Failure whose
`facts["units"]` lists the units; the same traceback printed by eight TP workers is one Failure.
The number of distinct failures is capped so a pathological log cannot exhaust memory.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from tools.diagnose.classify import classify_compile
from tools.diagnose.compile_patterns import CLANG_HEADER, SOURCE_EXTS
from tools.diagnose.compile_record import CompilerDiagnostic
from tools.diagnose.signature import (
    is_system_path,
    make_signature,
    normalize_message,
    relativize,
    rocm_version,
)
from tools.records import Failure

MAX_FAILURES = 2000
MAX_UNKNOWN = 50
MAX_UNITS = 50
MAX_EXCERPT_CHARS = 8000


class Collector:
    """Accumulates Failures in log order, merging duplicates."""

    def __init__(self, repo_root: str | Path | None = None, source: str | None = None):
        self.repo_root = repo_root
        self.source = source
        self.failures: list[Failure] = []
        self.dropped = 0
        self._index: dict[tuple[str, str | None, int | None, int | None, str], Failure] = {}
        self._unknown = 0

    def add(self, failure: Failure) -> None:
        """Normalise paths, sign, and keep `failure` unless it repeats one already kept."""
        failure.file = relativize(failure.file, self.repo_root)
        failure.excerpt = failure.excerpt[:MAX_EXCERPT_CHARS]
        unit = failure.facts.get("unit")
        if unit:
            failure.facts["unit"] = relativize(unit, self.repo_root)
        failure.signature = make_signature(failure.kind, failure.file, failure.symbol, failure.message)
        key = (
            failure.signature,
            failure.file,
            failure.line,
            failure.column,
            normalize_message(failure.message),
        )
        seen = self._index.get(key)
        if seen is not None:
            self._merge_unit(seen, failure.facts.get("unit"))
            self._merge_target(seen, failure.facts.get("target"))
            return
        if failure.kind == "unknown":
            if self._unknown >= MAX_UNKNOWN:
                self.dropped += 1
                return
            self._unknown += 1
        if len(self.failures) >= MAX_FAILURES:
            self.dropped += 1
            return
        self._index[key] = failure
        self.failures.append(failure)

    def relocate(self, failure: Failure, path: str, line: int | None) -> None:
        """Give a failure logged without a location the file and line found for it later."""
        failure.file, failure.line = relativize(path, self.repo_root), line
        failure.signature = make_signature(failure.kind, failure.file, failure.symbol, failure.message)

    @staticmethod
    def _merge_unit(seen: Failure, unit: str | None) -> None:
        if not unit or unit == seen.facts.get("unit"):
            return
        units = seen.facts.setdefault("units", [u for u in [seen.facts.get("unit")] if u])
        if unit not in units and len(units) < MAX_UNITS:
            units.append(unit)

    @staticmethod
    def _merge_target(seen: Failure, target: str | None) -> None:
        """hipcc repeats an error once per --offload-arch: keep every target it failed for."""
        if not target or target == seen.facts.get("target"):
            return
        targets = seen.facts.setdefault("targets", [t for t in [seen.facts.get("target")] if t])
        if target not in targets:
            targets.append(target)

    def add_compile(self, diag: CompilerDiagnostic) -> None:
        """A compiler/linker diagnostic, classified."""
        kind, symbol = classify_compile(diag, self.repo_root)
        if diag.file and diag.file.startswith("<"):
            _locate_by_note(diag)
        if diag.link_symbol and kind == "compile_error":
            kind = "link_error"
        facts: dict[str, Any] = {}
        if diag.unit:
            facts["unit"] = diag.unit
        if diag.target:
            facts["target"] = diag.target
        version = rocm_version(" ".join([diag.file or "", *diag.chain, *diag.lines]))
        if version:
            facts["rocm_version"] = version  # a header from one ROCm release and a compiler from another...
        if diag.file and is_system_path(diag.file, self.repo_root):
            # the fix (or the report) belongs to the repo file that reached the toolchain header
            facts["header"] = relativize(diag.file)
            diag.file, diag.line, diag.column = self._repo_file_of(diag), None, None
        source = diag.tool
        if source in ("clang", "gcc", "driver") and self.source:
            source = self.source
        self.add(
            Failure(
                kind=kind,
                message=diag.message[:500],
                file=diag.file,
                line=diag.line,
                column=diag.column,
                symbol=symbol,
                excerpt=textwrap.dedent("\n".join(diag.lines)).strip("\n"),
                source=source,
                facts=facts,
            )
        )

    def _repo_file_of(self, diag: CompilerDiagnostic) -> str | None:
        """The repo file that reached the toolchain header: the nearest instantiation note in the repo,
        else the innermost repo file of the include chain (or CMake call stack), else the unit."""
        noted = [m.group("file") for m in map(CLANG_HEADER.match, (n.strip() for n in diag.notes)) if m]
        for path in [*noted, *diag.chain, *([diag.unit] if diag.unit else [])]:
            if not is_system_path(path, self.repo_root):
                return path
        return None


def _locate_by_note(diag: CompilerDiagnostic) -> None:
    """Errors inside `<inline asm>` or `<scratch space>` point at the source line through a note."""
    for note in diag.notes:
        m = CLANG_HEADER.match(note.strip())
        if m and not m.group("file").startswith("<"):
            diag.file, diag.line = m.group("file"), int(m.group("line"))
            diag.column = int(m.group("col")) if m.group("col") else None
            if diag.unit is None and diag.file.endswith(SOURCE_EXTS):
                diag.unit = diag.file
            return
