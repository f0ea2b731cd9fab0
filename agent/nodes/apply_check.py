"""apply_check: apply each proposal of the wave, check it cheaply, commit it or revert it.

Compile-side patches are checked by compiling the touched units (hipcc in the sandbox, nvcc on the
host, CUDA -E identity). Load-side patches are checked by rerunning the load check. Newly unmasked
failures in a unit go straight back to propose: no full rebuild until the wave is done.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from langgraph.types import interrupt

from agent.journal import Entry, WaveJournal, restore_commits, wave_key
from agent.nodes.budget import budget_stop
from agent.nodes.checkout import reset_to_head
from agent.nodes.checks import Verdict, validate_compile
from agent.nodes.env import RunEnv
from agent.nodes.load_check import run_load_check
from agent.nodes.propose import same_failure, workspace
from agent.state import PortState
from tools import git as gitops
from tools.patching import PatchError, apply_diff, revert_diff
from tools.records import CheckResult, Failure, PatchOutcome, Proposal


def _review(state: PortState, env: RunEnv) -> dict[int, bool]:
    """Ask once, before anything is applied, about every LLM patch of the wave (resumable)."""
    llm = [i for i, p in enumerate(state.proposals) if p["proposer"].startswith("llm:")]
    if not env.review or not llm:
        return {}
    answer = interrupt({"review": [{"index": i, "proposer": state.proposals[i]["proposer"],
                                    "kind": state.proposals[i]["kind"], "diff": state.proposals[i]["diff"],
                                    "rationale": state.proposals[i]["rationale"]} for i in llm]})
    if isinstance(answer, bool):
        return {i: answer for i in llm}
    return {int(k): bool(v) for k, v in dict(answer).items()}


def check(state: PortState, env: RunEnv, proposal: dict, open_failures: list[dict]) -> Verdict:
    """Apply the proposal and run the checks that fit the failure's stage; the patch stays applied
    only when the verdict is ok."""
    repo = Path(state.repo_dir)
    if env.job.strategy == "naive":
        return _apply_unchecked(repo, proposal)
    if state.failure_stage == "build":
        verdict = validate_compile(env, repo, proposal, open_failures)
        if verdict.reason and verdict.applied and _applied(repo, proposal):
            revert_diff(repo, proposal["diff"])
        return verdict
    return check_load_side(state, env, proposal, open_failures)


def _fixer_check(state: PortState, env: RunEnv, proposal: dict) -> CheckResult | None:
    """The rule's own cheap check when it has one (weight remaps replayed over the checkpoint index)."""
    from agent.rules import all_fixers

    family = proposal["proposer"].removeprefix("rule:")
    fixer = next((f for f in all_fixers() if f.family == family), None)
    if not proposal["proposer"].startswith("rule:") or fixer is None or not hasattr(fixer, "check"):
        return None
    return fixer.check(Proposal.from_dict(proposal), workspace(state, env))


def check_load_side(state: PortState, env: RunEnv, proposal: dict, open_failures: list[dict]) -> Verdict:
    """Rule check first (no code runs), then apply and rerun the load check; without a load check hook
    the rule's check is the evidence and the launch decides."""
    repo, failure = Path(state.repo_dir), proposal["failure"]
    pre = _fixer_check(state, env, proposal)
    if pre is not None and not pre.ok:
        return Verdict(checks=[pre], reason=f"{pre.name}: {pre.detail}", applied=False)
    try:
        apply_diff(repo, proposal["diff"])
    except PatchError as exc:
        return Verdict(reason=str(exc), applied=False)
    if not env.profile.load_check:
        return Verdict(checks=[pre] if pre else [CheckResult(name="load check", ok=True,
                                                             detail="no load_check hook: the launch decides")])
    after, detail = run_load_check(state, env, f"recheck-{failure['kind']}")
    still = [f for f in after if same_failure(failure, f)]
    behind = [f for f in after if not same_failure(failure, f)]
    if behind and not still:
        detail = (f"the {failure['kind']} failure is gone; the load now stops at the next one: "
                  + "; ".join(f"{f['kind']} {f.get('symbol') or ''}".strip() for f in behind[:3]) + f" ({detail})")
    checks = ([pre] if pre else []) + [CheckResult(name=f"load check: {failure['kind']} gone", ok=not still,
                                                   detail=detail)]
    verdict = Verdict(checks=checks, load_checks=1)
    if still:
        verdict.reason = f"the {failure['kind']} failure is still reported by the load check"
        revert_diff(repo, proposal["diff"])
    verdict.unmasked = [f for f in after if f not in still and not any(same_failure(f, o) for o in open_failures)]
    return verdict


def _apply_unchecked(repo: Path, proposal: dict) -> Verdict:
    """The naive baseline: no cheap check; the next full rebuild or relaunch is the only proof."""
    try:
        apply_diff(repo, proposal["diff"])
    except PatchError as exc:
        return Verdict(reason=str(exc), applied=False)
    return Verdict(checks=[CheckResult(name="naive: no cheap check", ok=True,
                                       detail="proven only by the next full rebuild or server launch")])


def _applied(repo: Path, proposal: dict) -> bool:
    return bool(gitops.dirty_files(repo, *proposal["files"]))


def _message(proposal: dict, verdict: Verdict) -> str:
    """The commit message of a kept patch: what it fixes, why, and the evidence of its checks."""
    failure = proposal["failure"]
    where = failure.get("file") or failure.get("symbol") or ""
    subject = f"rocport: fix {failure['kind']} {where} ({proposal['proposer']})"
    return gitops.patch_commit_message(subject, failure, proposal["rationale"], verdict.checks)


@dataclass
class _Wave:
    """What the wave has done so far (rebuilt from the journal when a killed wave is resumed)."""

    counters: dict
    outcomes: list[dict]
    fixed: list[str]
    head: str
    unmasked: list[dict] = field(default_factory=list)
    done: set[int] = field(default_factory=set)
    loads_clean: bool = False
    """True when the last kept load-side patch's recheck loaded the checkpoint without any failure."""

    def add(self, entry: Entry, commit: str | None) -> None:
        """Count one finished proposal (`commit` is the kept patch's commit)."""
        self.done.add(entry.index)
        self.counters["unit_compiles"] += entry.unit_compiles
        self.counters["load_checks"] += entry.load_checks
        if entry.outcome is None:
            return
        if entry.checked:
            self.loads_clean = entry.loads_clean
        self.outcomes.append({**entry.outcome, "commit": commit} if commit else entry.outcome)
        if commit:
            self.head = commit
            self.fixed.append(entry.outcome["proposal"]["failure_signature"])
            self.unmasked += [f for f in entry.unmasked if not any(same_failure(f, u) for u in self.unmasked)]


def _resume_wave(state: PortState, env: RunEnv, journal: WaveJournal, key: str) -> _Wave:
    """The wave as far as the journal recorded it; the clone put at its last kept patch."""
    wave = _Wave(dict(state.counters), list(state.outcomes), list(state.fixed), state.head)
    entries = journal.entries(key)
    if not entries:
        reset_to_head(state)
        return wave
    commits = iter(restore_commits(state.repo_dir, state.head, entries))
    for entry in entries:
        wave.add(entry, next(commits) if entry.kept else None)
    env.observer.emit("note", message=f"resumed the interrupted patch wave: {len(entries)} proposal(s) already "
                                      f"checked ({sum(e.kept for e in entries)} kept) are not redone")
    return wave


def _record(env: RunEnv, journal: WaveJournal, wave: _Wave, entry: Entry, repo: Path) -> None:
    """Journal the verdict first, then commit a kept patch: a kill in between loses nothing."""
    journal.record(entry)
    proposal = entry.outcome["proposal"]
    commit = gitops.commit_files(repo, proposal["files"], entry.message) if entry.kept else None
    wave.add(entry, commit)
    kind, file = entry.kind, entry.file
    if commit:
        env.rundir.save_patch(kind, "kept", proposal["diff"])
        env.observer.emit("patch_kept", proposer=proposal["proposer"], kind=kind, file=file, commit=commit,
                          counters=wave.counters)
    else:
        env.rundir.save_patch(kind, "reverted" if entry.outcome["applied"] else "not-applied", proposal["diff"])
        env.observer.emit("patch_reverted", proposer=proposal["proposer"], kind=kind, file=file,
                          reason=entry.outcome["reason"], counters=wave.counters)


def apply_check(state: PortState, env: RunEnv) -> dict:
    """Apply, check, keep (commit) or revert every proposal of the wave; a resumed wave continues
    after the last proposal its journal recorded."""
    decisions = _review(state, env)
    journal, key = WaveJournal(env.rundir.path / "journal.jsonl"), wave_key(state.iteration, state.head)
    wave = _resume_wave(state, env, journal, key)
    repo = Path(state.repo_dir)
    for index, proposal in enumerate(state.proposals):
        if index in wave.done:
            continue
        record = Proposal.from_dict(proposal)
        if decisions.get(index) is False:
            outcome = PatchOutcome(record, applied=False, reason="rejected in review").to_dict()
            _record(env, journal, wave, Entry(key, index, outcome, kind=proposal["kind"], checked=False,
                                              file=proposal["failure"].get("file")), repo)
            continue
        open_failures = state.failures + wave.unmasked
        verdict = check(state, env, proposal, open_failures)
        if not verdict.applied and record.proposer.startswith("rule:"):
            # an earlier patch of this wave changed the file: ask the rules again on the new tree
            again = env.proposers[0].propose(Failure.from_dict(proposal["failure"]), workspace(state, env))
            if again is None:
                env.observer.emit("note", message=f"{proposal['kind']} in {proposal['failure'].get('file')}: "
                                                  f"already covered by an earlier patch of this wave")
                skipped = Entry(key, index, None, unit_compiles=verdict.unit_compiles,
                                load_checks=verdict.load_checks)
                journal.record(skipped)
                wave.add(skipped, None)
                continue
            proposal = {**proposal, **again.to_dict()}
            record = again
            verdict = check(state, env, proposal, open_failures)
        outcome = PatchOutcome(record, applied=verdict.applied, checks=verdict.checks, kept=verdict.ok,
                               reason="checks passed" if verdict.ok else verdict.reason).to_dict()
        entry = Entry(key, index, outcome, kind=proposal["kind"], file=proposal["failure"].get("file"),
                      unmasked=verdict.unmasked,
                      unit_compiles=verdict.unit_compiles, load_checks=verdict.load_checks,
                      loads_clean=verdict.ok and verdict.load_checks > 0 and not verdict.unmasked,
                      message=_message(proposal, verdict) if verdict.ok else "")
        _record(env, journal, wave, entry, repo)
    update = _next(state, env, wave.counters, wave.outcomes, wave.fixed, wave.head, wave.unmasked)
    if wave.loads_clean and not update.get("stop_reason"):
        # the recheck just loaded the checkpoint: no second load check before the launch
        update["stages"] = {**state.stages, "load": {**state.stages.get("load", {}), "status": "passed",
                                                      "detail": "loads after the kept patches"}}
        update["failure_stage"] = "load"
    return update


def _next(state: PortState, env: RunEnv, counters: dict, outcomes: list[dict], fixed: list[str], head: str,
          unmasked: list[dict]) -> dict:
    kept_now = [o for o in outcomes[len(state.outcomes):] if o["kept"]]
    update = {"counters": counters, "outcomes": outcomes, "fixed": sorted(set(fixed)), "head": head,
              "proposals": [], "failures": unmasked}
    if unmasked:
        env.observer.emit("diagnosed", stage="unit compile", count=len(unmasked),
                          kinds=sorted({f["kind"] for f in unmasked}), signatures=[f.get("signature") for f in unmasked])
        update["stop_reason"] = budget_stop(state, env, "propose")
    elif not kept_now:
        update["stop_reason"] = "no patch of this wave survived its checks"
    elif state.failure_stage == "build":
        update["stop_reason"] = budget_stop(state, env, "build")
    return update
