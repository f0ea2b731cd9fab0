"""The port loop's state: typed records (tools.records' Failure, Proposal, PatchOutcome; StageResult here)
and JSON types, so every checkpoint can be saved and resumed.

Nodes return partial updates (a dict of the fields they change); lists are replaced, never mutated.
Fields with a reducer (`Annotated[type, reducer]`) are combined by LangGraph instead: an update to
`known_failures` adds to it, one to `elapsed_s` adds seconds. A checkpoint saved before the state was
typed holds the records as dicts: `PortState.__post_init__` reads them back as records, so old runs
resume. `to_json` is the state as state.json holds it (what tools.report and tools.pr read).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Annotated, Any, get_type_hints

from tools.records import CheckResult, Failure, PatchOutcome, Proposal

COUNTERS = ("builds", "unit_compiles", "launches", "load_checks", "tokens_in", "tokens_out", "llm_calls")


def zero_counters() -> dict[str, Any]:
    counts: dict[str, Any] = dict.fromkeys(COUNTERS, 0)
    counts["cost_usd"] = None  # unknown until a priced model spends something
    return counts


def merge_known(known: dict[str, Failure], new: dict[str, Failure]) -> dict[str, Failure]:
    """Reducer of `known_failures`: an update adds failures by key; the run never forgets one."""
    return {**known, **new}


def add_seconds(total: float, more: float) -> float:
    """Reducer of `elapsed_s`: each node adds the wall seconds it spent."""
    return total + more


@dataclass
class StageResult:
    """What one stage (preflight, unit, build, load, serve, bench) came to."""

    status: str = "not reached"
    """passed, failed, skipped, or `not run: <why>`."""
    detail: str = ""
    log: str = ""
    """Run-dir path of the stage's log, when it has one."""
    facts: dict[str, Any] = field(default_factory=dict)
    """What only this stage knows: unit rows and their source, the server's port, the benchmark JSON,
    the expected-params file, the preflight checks."""

    def to_dict(self) -> dict[str, Any]:
        """The flat JSON shape state.json and the reports read: status, detail, log, then the facts."""
        return {
            "status": self.status,
            "detail": self.detail,
            **({"log": self.log} if self.log else {}),
            **self.facts,
        }

    @classmethod
    def coerce(cls, value: StageResult | dict[str, Any]) -> StageResult:
        """The record itself, or one read from a stage dict (a checkpoint saved before the state was typed)."""
        return cls.from_dict(value) if isinstance(value, dict) else value

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StageResult:
        """A stage from its flat JSON shape (unknown keys are its facts)."""
        rest = {k: v for k, v in data.items() if k not in ("status", "detail", "log")}
        return cls(
            str(data.get("status", "not reached")),
            str(data.get("detail", "")),
            str(data.get("log", "")),
            rest,
        )


@dataclass
class PortState:
    """Everything a port run knows between nodes."""

    run_id: str = ""
    """Name of the run (its directory under $ROCPORT_HOME/runs and its checkpoint thread)."""
    repo_dir: str = ""
    """The run's own clone of the framework."""
    branch: str = ""
    """Work branch holding one commit per kept patch."""
    base_commit: str = ""
    """The commit the port started from."""
    head: str = ""
    """Last commit known good to the loop; a resumed node resets the clone to it first."""
    phase: str = "checkout"
    """The node that ran last."""
    iteration: int = 0
    """Propose/apply rounds so far."""
    started_at: float = 0.0
    """Epoch seconds when the run began (wall-time budget spans resumes)."""
    elapsed_s: Annotated[float, add_seconds] = 0.0
    """Wall seconds spent in nodes so far, across resumes (the wall-time budget); updates add to it."""
    last_log: str = ""
    """Run-dir path of the latest build (or launch) log, which diagnose reads."""
    scan: list[Failure] = field(default_factory=list)
    """Static scan findings (source=scan)."""
    failures: list[Failure] = field(default_factory=list)
    """Open failures found by the latest build, load check or launch."""
    failure_stage: str = ""
    """Which stage found `failures`: build, load or serve; patches go back there to be re-checked."""
    history: list[list[str]] = field(default_factory=list)
    """Sorted failure signatures of every diagnosis, oldest first (stall detection)."""
    proposals: list[Proposal] = field(default_factory=list)
    """Proposals waiting for apply_check, each with the failure it addresses (`Proposal.failure`)."""
    outcomes: list[PatchOutcome] = field(default_factory=list)
    """Every applied-or-rejected patch, oldest first."""
    known_failures: Annotated[dict[str, Failure], merge_known] = field(default_factory=dict)
    """Every failure the run met, by Failure.key (reports show each one's fate); updates add to it."""
    unfixable: list[dict] = field(default_factory=list)
    """Failures no proposer could fix: {signature, kind, reason}."""
    fixed: list[str] = field(default_factory=list)
    """Signatures of failures a kept patch removed."""
    counters: dict[str, Any] = field(default_factory=zero_counters)
    """builds, unit_compiles, launches, load_checks, tokens_in, tokens_out, llm_calls, cost_usd."""
    stages: dict[str, StageResult] = field(default_factory=dict)
    """Per stage: what it came to."""
    bench: dict | None = None
    """The benchmark result JSON when the bench ran."""
    stop_reason: str = ""
    """Why the run ended: green, a budget, a stall, nothing left to propose."""
    status: str = "running"
    """running, green, partial, failed."""
    report_path: str = ""

    def __post_init__(self) -> None:
        # a checkpoint or state saved before the state was typed holds these as dicts
        self.scan = [Failure.coerce(f) for f in self.scan]
        self.failures = [Failure.coerce(f) for f in self.failures]
        self.proposals = [Proposal.coerce(p) for p in self.proposals]
        self.outcomes = [PatchOutcome.coerce(o) for o in self.outcomes]
        self.known_failures = {k: Failure.coerce(f) for k, f in self.known_failures.items()}
        self.stages = {k: StageResult.coerce(v) for k, v in self.stages.items()}

    def stage(self, name: str) -> StageResult:
        """The stage's result; `not reached` when it has not run."""
        return self.stages.get(name) or StageResult()


RECORDS = (Failure, Proposal, CheckResult, PatchOutcome, StageResult)
"""The record types a checkpoint holds (the checkpointer rebuilds these and no other class)."""


def signatures(failures: list[Failure]) -> list[str]:
    """The sorted keys (Failure.key) of a failure list: what stall detection compares."""
    return sorted({f.key for f in failures})


def to_json(state: PortState) -> dict[str, Any]:
    """The state as JSON types: what state.json holds and RunRecord.state carries."""
    data = asdict(state)
    data["stages"] = {name: stage.to_dict() for name, stage in state.stages.items()}
    return data


def _reducers() -> dict[str, Any]:
    hints = get_type_hints(PortState, include_extras=True)
    return {name: hint.__metadata__[0] for name, hint in hints.items() if hasattr(hint, "__metadata__")}


def apply_update(state: PortState, update: dict[str, Any]) -> PortState:
    """The state after a node's update, reduced as the graph reduces it (state.json between nodes)."""
    reduced = {
        name: reducer(getattr(state, name), update[name])
        for name, reducer in _reducers().items()
        if name in update
    }
    return replace(state, **{**update, **reduced})
