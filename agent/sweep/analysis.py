"""What changed between nights: regressions, failure clusters, fixed-since and broken-since."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from agent.sweep.results import STAGES, CellResult
from tools.records import failure_key

MIN_DROP = 0.05  # a throughput drop under 5% is noise on shared machines
SIGMAS = 3.0


@dataclass
class Regression:
    cell_key: str
    night: str
    what: str
    """stage_lost or throughput."""
    detail: str


@dataclass
class Cluster:
    """One failure signature across cells and nights."""

    signature: str
    kind: str
    message: str
    cells: list[str] = field(default_factory=list)
    """Cells that show it on the latest night it was seen."""
    first_seen: str = ""
    last_seen: str = ""
    streak: int = 0
    """Consecutive nights, ending with the latest night of the sweep, on which it was seen."""


@dataclass
class CellHistory:
    cell_key: str
    latest: CellResult
    passing_since: str | None = None
    """First night of the current run of passing nights (when passing now)."""
    broken_since: str | None = None
    """First night of the current run of failing nights (when failing now)."""
    fixed_on: str | None = None
    """The night it went from failing to passing, when that is the current streak's start."""


def _by_cell(results: list[CellResult]) -> dict[str, list[CellResult]]:
    cells: dict[str, list[CellResult]] = {}
    for r in sorted(results, key=lambda r: r.night):
        cells.setdefault(r.cell_key, []).append(r)
    return cells


def regressions(results: list[CellResult], history_nights: int = 7) -> list[Regression]:
    """Latest night vs the past: a stage reached before and lost now, or throughput below the median
    of the last N nights by more than max(5%, 3 sigma)."""
    found: list[Regression] = []
    for key, runs in _by_cell(results).items():
        if len(runs) < 2:
            continue
        latest, past = runs[-1], runs[:-1][-history_nights:]
        prev = past[-1]
        lost = [s for s in STAGES if prev.stages.get(s) and not latest.stages.get(s)]
        if lost:
            found.append(
                Regression(
                    key,
                    latest.night,
                    "stage_lost",
                    f"lost {', '.join(lost)} (reached on {prev.night}); {latest.reason}".strip("; "),
                )
            )
        values = [r.output_tok_s for r in past if r.output_tok_s]
        if latest.output_tok_s and values:
            median = statistics.median(values)
            sigma = statistics.pstdev(values) if len(values) > 1 else 0.0
            allowed = max(MIN_DROP * median, SIGMAS * sigma)
            if median - latest.output_tok_s > allowed:
                drop = 100 * (median - latest.output_tok_s) / median
                found.append(
                    Regression(
                        key,
                        latest.night,
                        "throughput",
                        f"{latest.output_tok_s:.1f} output tok/s vs median {median:.1f} over "
                        f"{len(values)} nights (-{drop:.1f}%, allowed -{100 * allowed / median:.1f}%)",
                    )
                )
    return found


def clusters(results: list[CellResult]) -> list[Cluster]:
    """Group failures by signature across cells, with first/last seen and the current streak."""
    nights = sorted({r.night for r in results})
    by_sig: dict[str, Cluster] = {}
    seen_on: dict[str, set[str]] = {}
    for r in sorted(results, key=lambda r: r.night):
        for f in r.failures:
            sig = failure_key(f)
            c = by_sig.setdefault(
                sig, Cluster(sig, f.get("kind", "unknown"), f.get("message", ""), first_seen=r.night)
            )
            if c.last_seen != r.night:
                c.cells = []
            c.last_seen = r.night
            if r.cell_key not in c.cells:
                c.cells.append(r.cell_key)
            seen_on.setdefault(sig, set()).add(r.night)
    for sig, c in by_sig.items():
        streak = 0
        for night in reversed(nights):
            if night not in seen_on[sig]:
                break
            streak += 1
        c.streak = streak
    return sorted(by_sig.values(), key=lambda c: (-c.streak, -len(c.cells), c.signature))


def histories(results: list[CellResult]) -> list[CellHistory]:
    """Per cell: passing since / broken since, and the night it was fixed."""
    out = []
    for key, runs in sorted(_by_cell(results).items()):
        latest = runs[-1]
        passing = latest.status == "passed"
        start = len(runs) - 1
        while start > 0 and (runs[start - 1].status == "passed") == passing:
            start -= 1
        h = CellHistory(key, latest)
        if passing:
            h.passing_since = runs[start].night
            h.fixed_on = runs[start].night if start > 0 else None
        else:
            h.broken_since = runs[start].night
        out.append(h)
    return out
