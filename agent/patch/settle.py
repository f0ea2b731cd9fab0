"""The validate-and-commit path of one proposal, the same for the port loop (apply_check) and `rocport fix`.

`check_units`: the Validator's checks (apply, hipcc + nvcc on the touched units, CUDA -E identity), then
every unit that still fails is compiled once more (the compile cache answers) and its errors sorted: one
inside the lines the patch wrote is the patch's fault (revert it); one elsewhere was masked by the old
first error (the next failure to fix, no rebuild needed).

`settle`: the decision (kept when every check passed) and its record: the caller's journal first, then
the commit of exactly the proposal's files with the evidence message, so a kill between the two loses
nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from agent.patch.commit import commit_message
from agent.patch.validate import Validator, compile_hip_unit
from sandboxes.base import CommandResult
from tools import git as gitops
from tools.patching import revert_diff
from tools.records import CheckResult, Failure, PatchOutcome, Proposal

_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")

Journal = Callable[[PatchOutcome, str], None]
"""Records a decided outcome and its commit message before a kept patch is committed."""
UnitLog = Callable[[str, CommandResult], Path]
"""Saves a unit's compile output under a name; returns the log's path (quoted in the reason)."""


@dataclass
class Verdict:
    """What the checks found for one patch."""

    checks: list[CheckResult] = field(default_factory=list)
    reason: str = ""
    """Empty when the patch may be kept."""
    unmasked: list[Failure] = field(default_factory=list)
    """New failures outside the patch's lines: masked before, to be fixed in this wave."""
    unit_compiles: int = 0
    load_checks: int = 0
    applied: bool = True
    """False when the diff did not apply (nothing to revert)."""

    @property
    def ok(self) -> bool:
        """True when the patch may be kept."""
        return not self.reason


def changed_lines(diff: str) -> dict[str, set[int]]:
    """New-file line numbers each file's added lines occupy (where a patch's own errors would be)."""
    out: dict[str, set[int]] = {}
    current, line = None, 0
    for text in diff.splitlines():
        if text.startswith("+++ "):
            name = text[4:].split("\t")[0].strip()
            current = name[2:] if name.startswith("b/") else None if name == "/dev/null" else name
            if current:
                out.setdefault(current, set())
        elif (m := _HUNK.match(text)) and current:
            line = int(m.group(1))
        elif current and text.startswith("+"):
            out[current].add(line)
            line += 1
        elif current and not text.startswith("-") and not text.startswith("\\"):
            line += 1
    return out


def check_units(
    validator: Validator,
    proposal: Proposal,
    failure: Failure,
    open_failures: list[Failure],
    log: UnitLog | None = None,
) -> Verdict:
    """Apply and check the proposal on its units; it stays applied only when the verdict is ok."""
    return judge_units(validator, validator.validate(proposal, failure), open_failures, log)


def judge_units(
    validator: Validator, outcome: PatchOutcome, open_failures: list[Failure], log: UnitLog | None = None
) -> Verdict:
    """The verdict of a proposal the Validator checked (alone, or with the wave's group): its checks, then
    the errors of every unit that still fails sorted; a patch whose own lines fail there is reverted."""
    verdict = Verdict(checks=list(outcome.checks))
    verdict.unit_compiles = sum(1 for c in outcome.checks if c.name.startswith(("hipcc", "nvcc")))
    if not outcome.kept:  # the Validator already reverted it; no checks ran when it did not apply
        verdict.reason = outcome.reason
        verdict.applied = bool(outcome.checks)
        return verdict
    still_failing = [
        c.name.rsplit(" ", 1)[-1]
        for c in outcome.checks
        if c.name.startswith("hipcc") and "unit still fails" in c.detail
    ]
    for unit in still_failing:
        _sort_unit_errors(validator, unit, outcome.proposal, open_failures, verdict, log)
    if verdict.reason:
        revert_diff(validator.root, outcome.proposal.diff)
    return verdict


def _sort_unit_errors(
    validator: Validator,
    unit: str,
    proposal: Proposal,
    open_failures: list[Failure],
    verdict: Verdict,
    log: UnitLog | None,
) -> None:
    """Compile a still-failing unit once more and sort its errors: the patch's own, or unmasked."""
    from tools.diagnose import diagnose_text

    result = compile_hip_unit(validator.tools, validator.root, unit)
    where = f" (log {log(f'unit-hip-{unit}', result)})" if log else ""
    verdict.unit_compiles += 1
    after = diagnose_text(result.output, repo_root=str(validator.root))
    lines = changed_lines(proposal.diff)
    own = [f for f in after if f.file in lines and f.line in lines[f.file]]
    if own and not verdict.reason:
        verdict.reason = f"the patch's own lines fail on hipcc: {own[0].message[:160]}{where}"
    for f in after:
        if f in own or any(f.same_as(o) for o in open_failures + verdict.unmasked):
            continue
        verdict.unmasked.append(f)


def decide(failure: Failure, proposal: Proposal, verdict: Verdict) -> tuple[PatchOutcome, str]:
    """The outcome of a checked proposal (kept when every check passed) and, when kept, its commit
    message; nothing is committed yet."""
    outcome = PatchOutcome(
        proposal,
        applied=verdict.applied,
        checks=verdict.checks,
        kept=verdict.ok,
        reason="checks passed" if verdict.ok else verdict.reason,
    )
    return outcome, commit_message(failure, proposal, verdict.checks) if outcome.kept else ""


def commit_kept(repo: Path, outcome: PatchOutcome, message: str) -> PatchOutcome:
    """Commit exactly a kept proposal's files with its evidence message; the outcome carries the commit."""
    if outcome.kept:
        outcome.commit = gitops.commit_files(repo, outcome.proposal.files, message)
    return outcome


def settle(
    repo: Path, failure: Failure, proposal: Proposal, verdict: Verdict, journal: Journal | None = None
) -> PatchOutcome:
    """Decide a checked proposal (kept when every check passed), journal it, then commit a kept one with
    the evidence message; the outcome carries the commit."""
    outcome, message = decide(failure, proposal, verdict)
    if journal is not None:
        journal(outcome, message)
    return commit_kept(repo, outcome, message)
