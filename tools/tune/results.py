"""The outcome of `rocport tune`: the searches, the chosen configuration, its rerun, the Pareto
front, tokens/s per node and per GPU, and $ per million output tokens (with reference rows)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tools.tune.records import Search, Trial

TUNE_DIR = "tune"
"""runs/<id>/tune/: the outcome, its markdown and plot, every benchmark's raw JSON."""
OUTCOME_FILE = "tune.json"


class ReferenceError(ValueError):
    """A --reference that cannot be read; the message shows the expected form."""


@dataclass
class Reference:
    """Another system's published figure, shown as a row beside ours (e.g. B200:3192:6.5)."""

    name: str
    tok_s_per_node: float
    price_per_gpu_hour: float | None = None
    gpus: int = 8

    @property
    def usd_per_mtok(self) -> float | None:
        return usd_per_mtok(self.tok_s_per_node, self.gpus, self.price_per_gpu_hour)


def parse_reference(text: str) -> Reference:
    """NAME:TOKENS_PER_S_PER_NODE[:PRICE_PER_GPU_HOUR[:GPUS]]."""
    parts = text.split(":")
    try:
        if len(parts) < 2 or len(parts) > 4 or not parts[0]:
            raise ValueError
        price = float(parts[2]) if len(parts) > 2 and parts[2] else None
        gpus = int(parts[3]) if len(parts) > 3 else 8
        ref = Reference(parts[0], float(parts[1]), price, gpus)
    except ValueError:
        raise ReferenceError(
            f"--reference {text!r}: use NAME:TOKENS_PER_S_PER_NODE[:PRICE_PER_GPU_HOUR[:GPUS]], "
            "e.g. B200:3192:6.5"
        ) from None
    if ref.tok_s_per_node <= 0 or ref.gpus < 1 or (price is not None and price < 0):
        raise ReferenceError(
            f"--reference {text!r}: tokens/s and GPUs must be positive, the price not negative"
        )
    return ref


def usd_per_mtok(tok_s_per_node: float | None, gpus: int, price_per_gpu_hour: float | None) -> float | None:
    """Dollars per million output tokens for a node of `gpus` at that price, serving at that rate."""
    if not tok_s_per_node or price_per_gpu_hour is None:
        return None
    return price_per_gpu_hour * gpus / 3600 / tok_s_per_node * 1e6


def pareto(trials: list[Trial]) -> list[Trial]:
    """Measured, valid trials no other beats on throughput, TTFT and TPOT at once."""
    pool = [t for t in trials if t.measured and t.valid and t.output_tok_s]

    def dominates(a: Trial, b: Trial) -> bool:
        a_tok, b_tok = a.output_tok_s or 0.0, b.output_tok_s or 0.0
        ge = a_tok >= b_tok and (a.ttft_ms or 0) <= (b.ttft_ms or 0) and (a.tpot_ms or 0) <= (b.tpot_ms or 0)
        gt = a_tok > b_tok or (a.ttft_ms or 0) < (b.ttft_ms or 0) or (a.tpot_ms or 0) < (b.tpot_ms or 0)
        return ge and gt

    return [t for t in pool if not any(dominates(o, t) for o in pool if o is not t)]


@dataclass
class TuneOutcome:
    """Everything one `rocport tune` found, written as runs/<id>/tune/tune.json."""

    run_id: str
    framework: str
    gpus: int
    workload: dict[str, Any]
    search: Search
    exhaustive: Search | None = None
    verify: Trial | None = None
    """The chosen configuration launched again with the same load."""
    moe: dict[str, Any] | None = None
    """The MoE kernel-config tuning: command, files, commit, evidence."""
    price_per_gpu_hour: float | None = None
    references: list[Reference] = field(default_factory=list)
    slo_ttft_ms: float | None = None
    slo_tpot_ms: float | None = None
    chosen_command: str = ""
    job_snippet: str = ""
    profile_snippet: str = ""

    @property
    def best(self) -> Trial | None:
        return self.search.best_trial()

    @property
    def rerun_delta(self) -> float | None:
        """Rerun throughput relative to the search's measurement (0.05 is 5% more)."""
        best, again = self.best, self.verify
        if not best or not again or not best.output_tok_s or not again.output_tok_s:
            return None
        return again.output_tok_s / best.output_tok_s - 1

    def usd_per_mtok(self, trial: Trial) -> float | None:
        return usd_per_mtok(trial.output_tok_s, trial.gpus, self.price_per_gpu_hour)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["search"] = self.search.to_dict()
        data["exhaustive"] = self.exhaustive.to_dict() if self.exhaustive else None
        data["rerun_delta"] = self.rerun_delta
        return data

    def write(self, out_dir: Path) -> Path:
        out_dir.mkdir(parents=True, exist_ok=True)
        path = out_dir / OUTCOME_FILE
        path.write_text(json.dumps(self.to_dict(), indent=2, default=str) + "\n")
        return path


def _search_from(data: dict[str, Any] | None) -> Search | None:
    if not data:
        return None
    trials = [Trial(**t) for t in data["trials"]]
    return Search(
        data["strategy"], trials, data["best"], data["grid_size"], data["wall_s"], data["stopped_by_budget"]
    )


def load_outcome(path: Path) -> TuneOutcome | None:
    """The outcome stored at `path` (tune.json), None when there is none."""
    if not path.is_file():
        return None
    data = json.loads(path.read_text())
    data.pop("rerun_delta", None)
    data["search"] = _search_from(data["search"])
    data["exhaustive"] = _search_from(data.get("exhaustive"))
    data["verify"] = Trial(**data["verify"]) if data.get("verify") else None
    data["references"] = [Reference(**r) for r in data.get("references", [])]
    return TuneOutcome(**data)
