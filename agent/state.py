"""The port loop's state: plain data only (JSON types), so every checkpoint can be saved and resumed.

Nodes return partial updates (a dict of the fields they change); lists are replaced, never mutated.
Failures and outcomes are stored as the dicts of tools.records (`Failure.to_dict()` ...).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

COUNTERS = ("builds", "unit_compiles", "launches", "load_checks", "tokens_in", "tokens_out", "llm_calls")


def zero_counters() -> dict[str, Any]:
    counts: dict[str, Any] = {name: 0 for name in COUNTERS}
    counts["cost_usd"] = None  # unknown until a priced model spends something
    return counts


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
    elapsed_s: float = 0.0
    """Wall seconds spent in nodes so far, across resumes (the wall-time budget)."""
    last_log: str = ""
    """Run-dir path of the latest build (or launch) log, which diagnose reads."""
    scan: list[dict] = field(default_factory=list)
    """Static scan findings (Failure dicts, source=scan)."""
    failures: list[dict] = field(default_factory=list)
    """Open failures found by the latest build, load check or launch."""
    failure_stage: str = ""
    """Which stage found `failures`: build, load or serve; patches go back there to be re-checked."""
    history: list[list[str]] = field(default_factory=list)
    """Sorted failure signatures of every diagnosis, oldest first (stall detection)."""
    proposals: list[dict] = field(default_factory=list)
    """Proposals waiting for apply_check (Proposal dicts)."""
    outcomes: list[dict] = field(default_factory=list)
    """Every applied-or-rejected patch (PatchOutcome dicts), oldest first."""
    known_failures: dict[str, dict] = field(default_factory=dict)
    """Every failure the run met, by signature (reports show each one's fate)."""
    unfixable: list[dict] = field(default_factory=list)
    """Failures no proposer could fix: {signature, kind, reason}."""
    fixed: list[str] = field(default_factory=list)
    """Signatures of failures a kept patch removed."""
    counters: dict[str, Any] = field(default_factory=zero_counters)
    """builds, unit_compiles, launches, load_checks, tokens_in, tokens_out, llm_calls, cost_usd."""
    stages: dict[str, dict] = field(default_factory=dict)
    """Per stage: {status: passed|failed|skipped|not run: <why>, detail, log}."""
    bench: dict | None = None
    """The benchmark result JSON when the bench ran."""
    stop_reason: str = ""
    """Why the run ended: green, a budget, a stall, nothing left to propose."""
    status: str = "running"
    """running, green, partial, failed."""
    report_path: str = ""


def signatures(failures: list[dict]) -> list[str]:
    """The stable, sorted signatures of a failure list (what stall detection compares)."""
    return sorted({f.get("signature") or f"{f['kind']}:{f.get('file')}:{f.get('symbol')}" for f in failures})
