"""The cheap checks of one patch, by the stage that found its failure: a build failure's patch is checked
on its units (agent.patch.settle.check_units, shared with `rocport fix`), a load failure's by the
rule's own check and a rerun of the load check; the naive strategy checks nothing.
"""

from __future__ import annotations

from pathlib import Path

from agent.loop.nodes.env import RunEnv
from agent.loop.nodes.load_check import run_load_check
from agent.loop.nodes.propose import workspace
from agent.loop.state import PortState
from agent.patch.settle import Verdict, check_units, judge_units
from agent.patch.validate import Validator
from tools.patching import PatchError, apply_diff, revert_diff
from tools.records import CheckResult, Failure, PatchOutcome, Proposal


def addressed(proposal: Proposal) -> Failure:
    """The failure a wave's proposal addresses (propose sets it on every proposal of the wave)."""
    if proposal.failure is None:
        raise ValueError(f"proposal by {proposal.proposer} for {proposal.failure_signature} has no failure")
    return proposal.failure


def validate_compile(env: RunEnv, repo: Path, proposal: Proposal, open_failures: list[Failure]) -> Verdict:
    """The unit checks `rocport fix` runs too (agent.patch.settle.check_units), with the run's sandbox,
    compile services and log directory."""
    from agent.patch.validate import Toolchains

    with env.clock.span("unit compile"):
        tools = Toolchains.from_profile(env.sandbox(), None, env.arch, env.profile, env.compilers())
        return check_units(
            Validator(repo, tools), proposal, addressed(proposal), open_failures, env.rundir.log_command
        )


def judge_compile(
    env: RunEnv, validator: Validator, outcome: PatchOutcome, open_failures: list[Failure]
) -> Verdict:
    """The verdict of a proposal the wave's group validated (agent.patch.settle.judge_units, as alone)."""
    with env.clock.span("unit compile"):
        return judge_units(validator, outcome, open_failures, env.rundir.log_command)


def check(state: PortState, env: RunEnv, proposal: Proposal, open_failures: list[Failure]) -> Verdict:
    """Apply the proposal and run the checks that fit the failure's stage; the patch stays applied
    only when the verdict is ok."""
    repo = Path(state.repo_dir)
    if env.job.strategy == "naive":
        return _apply_unchecked(repo, proposal)
    if state.failure_stage == "build":
        return validate_compile(env, repo, proposal, open_failures)
    return check_load_side(state, env, proposal, open_failures)


def _fixer_check(state: PortState, env: RunEnv, proposal: Proposal) -> CheckResult | None:
    """The rule's own cheap check when it has one (weight remaps replayed over the checkpoint index)."""
    from agent.proposers.rules import all_fixers

    family = proposal.proposer.removeprefix("rule:")
    fixer = next((f for f in all_fixers() if f.family == family), None)
    if not proposal.proposer.startswith("rule:") or fixer is None or not hasattr(fixer, "check"):
        return None
    return fixer.check(proposal, workspace(state, env))


def check_load_side(
    state: PortState, env: RunEnv, proposal: Proposal, open_failures: list[Failure]
) -> Verdict:
    """Rule check first (no code runs), then apply and rerun the load check; without a load check hook
    the rule's check is the evidence and the launch decides."""
    repo, failure = Path(state.repo_dir), addressed(proposal)
    pre = _fixer_check(state, env, proposal)
    if pre is not None and not pre.ok:
        return Verdict(checks=[pre], reason=f"{pre.name}: {pre.detail}", applied=False)
    try:
        apply_diff(repo, proposal.diff)
    except PatchError as exc:
        return Verdict(reason=str(exc), applied=False)
    if not env.profile.load_check:
        return Verdict(
            checks=[pre]
            if pre
            else [CheckResult(name="load check", ok=True, detail="no load_check hook: the launch decides")]
        )
    with env.clock.span("load check"):
        after, detail = run_load_check(state, env, f"recheck-{failure.kind}")
    still = [f for f in after if failure.same_as(f)]
    behind = [f for f in after if not failure.same_as(f)]
    if behind and not still:
        detail = (
            f"the {failure.kind} failure is gone; the load now stops at the next one: "
            + "; ".join(f"{f.kind} {f.symbol or ''}".strip() for f in behind[:3])
            + f" ({detail})"
        )
    checks = ([pre] if pre else []) + [
        CheckResult(name=f"load check: {failure.kind} gone", ok=not still, detail=detail)
    ]
    verdict = Verdict(checks=checks, load_checks=1)
    if still:
        verdict.reason = f"the {failure.kind} failure is still reported by the load check"
        revert_diff(repo, proposal.diff)
    verdict.unmasked = [f for f in after if f not in still and not any(f.same_as(o) for o in open_failures)]
    return verdict


def _apply_unchecked(repo: Path, proposal: Proposal) -> Verdict:
    """The naive baseline: no cheap check; the next full rebuild or relaunch is the only proof."""
    try:
        apply_diff(repo, proposal.diff)
    except PatchError as exc:
        return Verdict(reason=str(exc), applied=False)
    return Verdict(
        checks=[
            CheckResult(
                name="naive: no cheap check",
                ok=True,
                detail="proven only by the next full rebuild or server launch",
            )
        ]
    )
