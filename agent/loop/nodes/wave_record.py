"""What an apply_check wave has done so far, journaled proposal by proposal (agent.loop.journal) so a
killed wave resumes after its last recorded proposal instead of redoing the wave."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace

from agent.loop.journal import Entry, WaveJournal, restore_commits
from agent.loop.nodes.checkout import reset_to_head
from agent.loop.nodes.env import RunEnv
from agent.loop.state import PortState
from tools.records import Failure, PatchOutcome, Proposal


@dataclass
class Wave:
    """What the wave has done so far (rebuilt from the journal when a killed wave is resumed)."""

    counters: dict
    outcomes: list[PatchOutcome]
    fixed: list[str]
    head: str
    unmasked: list[Failure] = field(default_factory=list)
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
        self.outcomes.append(replace(entry.outcome, commit=commit) if commit else entry.outcome)
        if commit:
            self.head = commit
            self.fixed.append(entry.outcome.proposal.failure_signature)
            self.unmasked += [f for f in entry.unmasked if not any(f.same_as(u) for u in self.unmasked)]


def resume_wave(state: PortState, env: RunEnv, journal: WaveJournal, key: str) -> Wave:
    """The wave as far as the journal recorded it; the clone put at its last kept patch."""
    wave = Wave(dict(state.counters), list(state.outcomes), list(state.fixed), state.head)
    entries = journal.entries(key)
    if not entries:
        reset_to_head(state)
        return wave
    commits = iter(restore_commits(state.repo_dir, state.head, entries))
    announced = _announced(env)
    for entry in entries:
        commit = next(commits) if entry.kept else None
        wave.add(entry, commit)
        if commit and commit not in announced and entry.outcome is not None:
            _tell_kept(env, wave, entry, entry.outcome.proposal, commit)  # killed between commit and event
    env.observer.emit(
        "note",
        message=f"resumed the interrupted patch wave: {len(entries)} proposal(s) already "
        f"checked ({sum(e.kept for e in entries)} kept) are not redone",
    )
    return wave


def _announced(env: RunEnv) -> set[str]:
    """Commits the run's event log already reports kept."""
    path = env.rundir.events
    lines = path.read_text().splitlines() if path.exists() else []
    return {json.loads(ln).get("commit", "") for ln in lines if '"patch_kept"' in ln}


def _tell_kept(env: RunEnv, wave: Wave, entry: Entry, proposal: Proposal, commit: str) -> None:
    """Save a kept proposal's diff under patches/ and tell the observer its commit."""
    env.rundir.save_patch(entry.kind, "kept", proposal.diff)
    env.observer.emit(
        "patch_kept",
        proposer=proposal.proposer,
        kind=entry.kind,
        file=entry.file,
        commit=commit,
        counters=wave.counters,
    )


def announce(env: RunEnv, wave: Wave, entry: Entry, commit: str | None) -> None:
    """Count a journaled proposal, save its diff under patches/ and tell the observer what became of it."""
    wave.add(entry, commit)
    outcome = entry.outcome
    if outcome is None:  # skipped: covered by an earlier patch of the wave
        return
    proposal, kind, file = outcome.proposal, entry.kind, entry.file
    if commit:
        _tell_kept(env, wave, entry, proposal, commit)
        return
    env.rundir.save_patch(kind, "reverted" if outcome.applied else "not-applied", proposal.diff)
    env.observer.emit(
        "patch_reverted",
        proposer=proposal.proposer,
        kind=kind,
        file=file,
        reason=outcome.reason,
        counters=wave.counters,
    )
