"""apply_check: apply each proposal of the wave, check it cheaply, commit it or revert it.

Compile-side patches are checked by compiling the touched units (hipcc in the sandbox, nvcc on the
host, CUDA -E identity). Load-side patches are checked by rerunning the load check. Newly unmasked
failures in a unit go straight back to propose: no full rebuild until the wave is done.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from langgraph.types import interrupt

from agent.loop.journal import Entry, WaveJournal, wave_key
from agent.loop.nodes.budget import budget_stop
from agent.loop.nodes.checks import addressed, check
from agent.loop.nodes.env import RunEnv
from agent.loop.nodes.first_wave import before_first_build
from agent.loop.nodes.propose import workspace
from agent.loop.nodes.together import validate_together
from agent.loop.nodes.wave_record import Wave, announce, resume_wave
from agent.loop.state import PortState
from agent.patch.settle import Verdict, commit_kept, decide, settle
from agent.proposers.base import Decline
from tools.records import Failure, PatchOutcome, Proposal


def _review(state: PortState, env: RunEnv) -> dict[int, bool]:
    """Ask once, before anything is applied, about every LLM patch of the wave (resumable)."""
    llm = [i for i, p in enumerate(state.proposals) if p.proposer.startswith("llm:")]
    if not env.review or not llm:
        return {}
    answer = interrupt(
        {
            "review": [
                {
                    "index": i,
                    "proposer": state.proposals[i].proposer,
                    "kind": addressed(state.proposals[i]).kind,
                    "diff": state.proposals[i].diff,
                    "rationale": state.proposals[i].rationale,
                }
                for i in llm
            ]
        }
    )
    if isinstance(answer, bool):
        return dict.fromkeys(llm, answer)
    return {int(k): bool(v) for k, v in dict(answer).items()}


def _check_one(
    state: PortState, env: RunEnv, proposal: Proposal, open_failures: list[Failure]
) -> tuple[Proposal, Verdict, bool]:
    """Check one proposal; a rule patch that no longer applies (an earlier patch of this wave changed the
    file) is asked for again on the new tree. The last value is False when the rules now have nothing to
    do (the failure is covered already)."""
    verdict = check(state, env, proposal, open_failures)
    if verdict.applied or not proposal.proposer.startswith("rule:"):
        return proposal, verdict, True
    failure = addressed(proposal)
    try:
        again = env.proposers[0].propose(failure, workspace(state, env))
    except Decline:
        env.observer.emit(
            "note",
            message=f"{failure.kind} in {failure.file}: already covered by an earlier patch of this wave",
        )
        return proposal, verdict, False
    proposal = replace(again, failure=failure)
    return proposal, check(state, env, proposal, open_failures), True


def _entry(entry: Entry, proposal: Proposal, verdict: Verdict) -> Entry:
    """`entry` filled in from a checked proposal's verdict (its outcome comes from the decision)."""
    failure = addressed(proposal)
    entry.kind, entry.file, entry.unmasked = failure.kind, failure.file, verdict.unmasked
    entry.unit_compiles, entry.load_checks = verdict.unit_compiles, verdict.load_checks
    entry.loads_clean = verdict.ok and verdict.load_checks > 0 and not verdict.unmasked
    return entry


def _settle(
    env: RunEnv,
    journal: WaveJournal,
    wave: Wave,
    entry: Entry,
    proposal: Proposal,
    verdict: Verdict,
    repo: Path,
) -> None:
    """Decide, journal and commit one checked proposal through the path `rocport fix` takes
    (agent.patch.settle); `entry` is its journal entry, filled in here."""
    _entry(entry, proposal, verdict)

    def journaled(outcome: PatchOutcome, message: str) -> None:
        entry.outcome, entry.message = outcome, message
        journal.record(entry)

    with env.clock.span("git"):
        outcome = settle(repo, addressed(proposal), proposal, verdict, journaled)
    announce(env, wave, entry, outcome.commit)


def _settle_group(
    env: RunEnv, journal: WaveJournal, wave: Wave, key: str, judged: dict[int, Verdict], state: PortState
) -> None:
    """The group's decided members: every entry journaled before the first commit, then each kept one
    committed alone. A kill between two commits then finds both verdicts in the journal and commits the
    missing one from it, instead of checking that proposal again."""
    decided = []
    for index, verdict in sorted(judged.items()):
        proposal = state.proposals[index]
        entry = _entry(Entry(key, index, None), proposal, verdict)
        outcome, entry.message = decide(addressed(proposal), proposal, verdict)
        entry.outcome = outcome
        journal.record(entry)
        decided.append((entry, outcome))
    for entry, outcome in decided:
        with env.clock.span("git"):
            commit_kept(Path(state.repo_dir), outcome, entry.message)
        announce(env, wave, entry, outcome.commit)


def apply_check(state: PortState, env: RunEnv) -> dict:
    """Apply, check, keep (commit) or revert every proposal of the wave, through the validate-and-commit
    path `rocport fix` uses (agent.patch.settle); a resumed wave continues after the last proposal its
    journal recorded."""
    decisions = _review(state, env)
    journal, key = WaveJournal(env.rundir.path / "journal.jsonl"), wave_key(state.iteration, state.head)
    wave = resume_wave(state, env, journal, key)
    repo = Path(state.repo_dir)
    candidates = [
        (i, p) for i, p in enumerate(state.proposals) if i not in wave.done and decisions.get(i) is not False
    ]
    judged, spent = validate_together(state, env, candidates, state.failures + wave.unmasked)
    _settle_group(env, journal, wave, key, judged, state)
    for index, proposal in enumerate(state.proposals):
        if index in wave.done:
            continue
        checked = decisions.get(index) is not False
        if not checked:
            verdict = Verdict(reason="rejected in review", applied=False)
        else:
            proposal, verdict, needed = _check_one(state, env, proposal, state.failures + wave.unmasked)
            verdict.unit_compiles += spent.get(index, 0)  # its first check ran with the wave's group
            if not needed:
                skipped = Entry(
                    key, index, None, unit_compiles=verdict.unit_compiles, load_checks=verdict.load_checks
                )
                journal.record(skipped)
                announce(env, wave, skipped, None)
                continue
        _settle(env, journal, wave, Entry(key, index, None, checked=checked), proposal, verdict, repo)
    update = _next(state, env, wave.counters, wave.outcomes, wave.fixed, wave.head, wave.unmasked)
    if wave.loads_clean and not update.get("stop_reason"):
        # the recheck just loaded the checkpoint: no second load check before the launch
        load = replace(state.stage("load"), status="passed", detail="loads after the kept patches")
        update["stages"] = {**state.stages, "load": load}
        update["failure_stage"] = "load"
    return update


def _next(
    state: PortState,
    env: RunEnv,
    counters: dict,
    outcomes: list[PatchOutcome],
    fixed: list[str],
    head: str,
    unmasked: list[Failure],
) -> dict:
    kept_now = [o for o in outcomes[len(state.outcomes) :] if o.kept]
    update = {
        "counters": counters,
        "outcomes": outcomes,
        "fixed": sorted(set(fixed)),
        "head": head,
        "proposals": [],
        "failures": unmasked,
    }
    if unmasked:
        env.observer.emit(
            "diagnosed",
            stage="unit compile",
            count=len(unmasked),
            kinds=sorted({f.kind for f in unmasked}),
            signatures=[f.signature for f in unmasked],
        )
        update["stop_reason"] = budget_stop(state, env, "propose")
    elif not kept_now and not before_first_build(state):  # before it, the full build runs next
        update["stop_reason"] = "no patch of this wave survived its checks"
    elif state.failure_stage == "build":
        update["stop_reason"] = budget_stop(state, env, "build")
    return update
