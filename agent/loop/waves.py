"""Fix in waves: each wave fixes the failures known, then recompiles the units those fixes targeted.

A unit that still fails at the end of a wave is diagnosed again; its new errors (the ones the fixed
error had masked) are the next wave's failures. The session ends with one row per unit: it compiles,
or it still fails with its first error. A kept patch whose unit still fails is never called proven:
its unit's remaining errors are listed as that unit's next failures.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from agent.patch.fix import FixRecord, dedupe, fix_failures
from agent.patch.units import HEADER_EXTS, SOURCE_EXTS, touched_units
from agent.patch.validate import Validator, compile_hip_unit, first_error
from agent.proposers.base import Workspace
from tools.records import Failure

MAX_WAVES = 6


@dataclass
class UnitStatus:
    """Where one translation unit stands after the session."""

    unit: str
    compiles: bool
    first_error: str = ""
    next_failures: list[str] = field(default_factory=list)
    """Signatures of the errors it still reports (empty when it compiles)."""


@dataclass
class Session:
    """Every failure's record (with the wave it was met in) and every unit's final status."""

    records: list[FixRecord] = field(default_factory=list)
    units: list[UnitStatus] = field(default_factory=list)


def failure_units(ws: Workspace, failure: Failure) -> list[str]:
    """The translation units a failure was reported from (the log's), else its file's includers."""
    facts = failure.facts or {}
    units = list(facts.get("units") or ([facts["unit"]] if facts.get("unit") else []))
    if not units and failure.file and failure.file.endswith(SOURCE_EXTS + HEADER_EXTS):
        units = touched_units(ws.root, [failure.file])
    # only C/C++ units are compiled; a Python failure is proven by its import check, not here
    return [u for u in units if u.endswith(SOURCE_EXTS + HEADER_EXTS) and (ws.root / u).is_file()]


def _add(units: list[str], more: list[str]) -> None:
    units.extend(u for u in more if u not in units)


def unit_failures(output: str, root: Path | str, unit: str) -> list[Failure]:
    """A failing unit compile's errors, diagnosed, each knowing the unit it came from."""
    from tools.diagnose import diagnose_text

    found = diagnose_text(output, repo_root=root, source="hipcc")
    for f in found:
        f.facts.setdefault("unit", unit)
    return found


def compile_units(validator: Validator, units: list[str]) -> tuple[list[UnitStatus], list[Failure]]:
    """Compile each unit for ROCm; the failing ones' errors, diagnosed, in unit order."""
    statuses, failures = [], []
    for unit in units:
        res = compile_hip_unit(validator.tools, validator.root, unit)
        if res.ok:
            statuses.append(UnitStatus(unit, True))
            continue
        found = unit_failures(res.output, validator.root, unit)
        failures += found
        statuses.append(UnitStatus(unit, False, first_error(res.output), [f.signature for f in found]))
    return statuses, failures


def run_waves(
    ws: Workspace, failures: list[Failure], validator: Validator, max_waves: int = MAX_WAVES
) -> Session:
    """Fix, recompile the targeted units, fix what they report next, until they compile or nothing is kept."""
    session = Session()
    units: list[str] = []
    for f in failures:
        _add(units, failure_units(ws, f))
    wave = dedupe(failures)
    seen = {f.signature for f in wave}
    statuses: list[UnitStatus] | None = None
    for n in range(1, max_waves + 1):
        records = fix_failures(ws, wave, validator)
        for rec in records:
            rec.wave = n
            for o in rec.outcomes:
                if o.kept:
                    _add(units, touched_units(ws.root, o.proposal.files))
        session.records += records
        if statuses is not None and not any(r.status == "kept" for r in records):
            break  # nothing changed since the last compile
        statuses, found = compile_units(validator, units)
        wave = [f for f in dedupe(found) if f.signature not in seen]
        seen |= {f.signature for f in wave}
        if not wave or not any(r.status == "kept" for r in records):
            break
    session.units = statuses or []
    return session
