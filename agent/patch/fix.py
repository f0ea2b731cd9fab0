"""A fix session: failures -> rule proposals -> validation -> one commit per kept patch on a work branch."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from agent.patch.settle import Verdict, check_units, settle
from agent.patch.validate import Validator
from agent.proposers.base import Workspace
from agent.proposers.rules import fixers_for, propose_for
from tools import git as gitops
from tools.records import Failure, PatchOutcome, Proposal


class FixError(ValueError):
    """The repo cannot be fixed as asked (not a git repo, dirty tree, ...); one line, with what to do."""


@dataclass
class FixRecord:
    """What the session did with one failure."""

    failure: Failure
    status: str
    """kept | fixed_earlier | rejected | declined | no_rule | nothing_proposed | proposed (dry run)

    fixed_earlier: an earlier kept patch of the same wave already fixed it (its unit compiled after that
    patch, or no longer reported it); the commit is that patch's.

    nothing_proposed: rules exist for the kind, none matched and none said why; the failure was seen
    (by scan or a compile) so it is not called fixed."""
    proposals: list[Proposal] = field(default_factory=list)
    outcomes: list[PatchOutcome] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    wave: int = 1
    """The wave the failure was met in (1 = the log's; later ones were masked by fixed errors)."""


def git(root: Path, *args: str) -> str:
    """Run git in the repo; FixError with git's first line of stderr when it fails."""
    try:
        return gitops.git(root, *args, timeout=120)
    except gitops.GitError as exc:
        raise FixError(str(exc)) from None


def start_branch(root: Path) -> str:
    """Check out a fresh work branch `rocport/fix-<short HEAD>` (suffixed when it already exists)."""
    if not gitops.is_repo(root):
        raise FixError(
            f"{root} is not a git repository: rocport fix commits each patch, so run it on a git checkout"
        )
    if git(root, "status", "--porcelain", "--untracked-files=no"):
        raise FixError(f"{root} has uncommitted changes to tracked files: commit or stash them first")
    base = f"rocport/fix-{git(root, 'rev-parse', '--short', 'HEAD')}"
    existing = set(git(root, "branch", "--list", f"{base}*", "--format=%(refname:short)").splitlines())
    name, n = base, 2
    while name in existing:
        name, n = f"{base}-{n}", n + 1
    git(root, "checkout", "-q", "-b", name)
    return name


def current_checkout(root: Path) -> str:
    """The branch the user is on, or the commit of a detached HEAD (what restore_checkout goes back to)."""
    branch = gitops.run(root, "symbolic-ref", "-q", "--short", "HEAD", ok=range(256)).stdout.strip()
    return branch or git(root, "rev-parse", "HEAD")


def restore_checkout(root: Path, original: str, work_branch: str | None) -> None:
    """Back to the user's checkout after a failed session: the unfinished patch is dropped, kept patches
    stay on the work branch (removed when it has none)."""
    if work_branch and current_checkout(root) == work_branch:
        git(root, "reset", "-q", "--hard")  # the session started from a clean tree: only its own edits go
    git(root, "checkout", "-q", original)
    if work_branch and not git(root, "rev-list", f"{original}..{work_branch}"):
        git(root, "branch", "-q", "-D", work_branch)


def dedupe(failures: list[Failure]) -> list[Failure]:
    """One failure per patch target (Failure.target): a build log repeats the same error per target."""
    seen, out = set(), []
    for f in failures:
        if f.target not in seen:
            seen.add(f.target)
            out.append(f)
    return out


@dataclass
class _Landed:
    """What one kept patch left behind: the units it made compile, and every error the others still report."""

    outcome: PatchOutcome
    compiled: set[str]
    still_failing: set[str]
    remaining: list[Failure]

    @classmethod
    def of(cls, outcome: PatchOutcome, verdict: Verdict) -> _Landed:
        units = {c.name.rsplit(" ", 1)[-1]: c.detail for c in outcome.checks if c.name.startswith("hipcc")}
        failing = {u for u, detail in units.items() if "unit still fails" in detail}
        return cls(outcome, set(units) - failing, failing, list(verdict.unmasked))

    def fixed(self, failure: Failure) -> bool:
        """True when this patch's unit compiles showed `failure` gone (its unit compiles, or no longer reports it)."""
        unit = (failure.facts or {}).get("unit") or failure.file
        if unit in self.compiled:
            return True
        return unit in self.still_failing and not any(failure.same_as(r) for r in self.remaining)


def validate_and_commit(
    validator: Validator, failure: Failure, proposal: Proposal
) -> tuple[PatchOutcome, Verdict]:
    """The port loop's path for one proposal (agent.patch.settle): unit checks, the patch's own new errors
    revert it, a kept patch is committed with the evidence message."""
    verdict = check_units(validator, proposal, failure, [])
    try:
        return settle(validator.root, failure, proposal, verdict), verdict
    except gitops.GitError as exc:
        raise FixError(str(exc)) from None


def _fix_one(
    ws: Workspace,
    failure: Failure,
    validator: Validator | None,
    dry_run: bool,
    landed: list[_Landed] | None = None,
) -> FixRecord:
    if not fixers_for(failure.kind):
        return FixRecord(failure, "no_rule")
    # One patch often fixes several errors of a file (every asm statement of it, every kernel-builtin use):
    # an error it already fixed is not proposed for again, nor called declined.
    earlier = next((done for done in landed or [] if done.fixed(failure)), None)
    if earlier is not None:
        return FixRecord(failure, "fixed_earlier", outcomes=[earlier.outcome])
    result = propose_for(failure, ws)
    record = FixRecord(
        failure,
        "declined" if result.declines else "nothing_proposed",
        proposals=result.proposals,
        reasons=list(result.declines),
    )
    for proposal in result.proposals:
        if dry_run or validator is None:
            record.status = "proposed"
            continue
        outcome, verdict = validate_and_commit(validator, failure, proposal)
        record.outcomes.append(outcome)
        if outcome.kept:
            record.status = "kept"
            if landed is not None:
                landed.append(_Landed.of(outcome, verdict))
            break
        record.status = "rejected"
        record.reasons.append(outcome.reason)
    return record


def fix_failures(
    ws: Workspace, failures: list[Failure], validator: Validator | None, dry_run: bool = False
) -> list[FixRecord]:
    """Propose for every failure in order; validate and commit each kept patch (nothing applied in a dry run).

    A failure a rule declined is asked once more after other fixes landed: one fix can settle
    what made another rule decline (warp-size literals first, then the warp width is clear).
    """
    landed: list[_Landed] = []
    records = [_fix_one(ws, f, validator, dry_run, landed) for f in dedupe(failures)]
    if dry_run or not any(r.status == "kept" for r in records):
        return records
    for i, rec in enumerate(records):
        if rec.status == "declined":
            retry = _fix_one(ws, rec.failure, validator, dry_run, landed)
            if retry.status in ("kept", "rejected", "fixed_earlier"):
                records[i] = retry
    return records
