"""What one candidate's launch measured, and what a whole search did."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Trial:
    """One candidate, launched once: its probe, its full benchmark (unless stopped early), its numbers."""

    key: str
    settings: dict[str, Any]
    """split label and switch values, for tables."""
    gpus: int
    command: str
    """The launch as a user would paste it (environment first)."""
    status: str = "pending"
    """measured | stopped early | failed | not launched (wall budget)."""
    reason: str = ""
    probe_tok_s: float | None = None
    """Output tok/s of the short probe (the early-stop comparison)."""
    output_tok_s: float | None = None
    """Median output tok/s of the repeats of the full measurement."""
    total_tok_s: float | None = None
    repeats: list[float] = field(default_factory=list)
    """Output tok/s of each repeat (their spread is the noise the search saw)."""
    ttft_ms: float | None = None
    """Median TTFT of the full measurement."""
    tpot_ms: float | None = None
    """Median TPOT of the full measurement."""
    meets_slo: bool = True
    valid: bool = True
    bench_json: str | None = None
    """The first repeat's raw benchmark JSON (the others lie beside it, -r2, -r3)."""
    wall_s: float = 0.0

    @property
    def measured(self) -> bool:
        return self.status == "measured"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Search:
    """The trials of one search, in launch order, and which won."""

    strategy: str
    """coordinate (one dimension at a time, early stop) or exhaustive (every candidate, full benchmark)."""
    trials: list[Trial] = field(default_factory=list)
    best: str | None = None
    """Key of the chosen trial."""
    grid_size: int = 0
    wall_s: float = 0.0
    stopped_by_budget: bool = False

    @property
    def launches(self) -> int:
        return sum(1 for t in self.trials if t.status != "not launched")

    def best_trial(self) -> Trial | None:
        return next((t for t in self.trials if t.key == self.best), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "trials": [t.to_dict() for t in self.trials],
            "best": self.best,
            "grid_size": self.grid_size,
            "launches": self.launches,
            "wall_s": self.wall_s,
            "stopped_by_budget": self.stopped_by_budget,
        }


def rank(trial: Trial) -> tuple[Any, ...]:
    """Sort key, best first: measured and valid, within the SLOs, then output tokens/s."""
    return (not (trial.measured and trial.valid), not trial.meets_slo, -(trial.output_tok_s or 0.0))
