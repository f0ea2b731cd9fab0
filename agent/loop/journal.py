"""The wave journal: every checked proposal of an apply_check wave, recorded before its commit.

LangGraph checkpoints a node only when it returns, so a run killed inside apply_check used to redo
the whole wave on resume (reset to the wave's start, recompile, recommit). Now each proposal's
verdict is appended (and fsynced) to runs/<id>/journal.jsonl the moment it is known, before the
kept patch is committed; a resumed wave replays the journal instead of redoing the work:

- the i-th kept entry of a wave is the i-th commit after the wave's start (commits happen in
  journal order, one per kept entry), so a kill between the entry and its commit is seen as a kept
  entry without a commit, and the commit is made from the recorded diff and message;
- reverted and skipped proposals are not checked again; their counts stay counted once.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from tools import git as gitops
from tools.patching import apply_diff
from tools.records import Failure, PatchOutcome


def wave_key(iteration: int, head: str) -> str:
    """One apply_check wave: the proposals of iteration N, applied on top of `head`."""
    return f"{iteration}:{head}"


@dataclass
class Entry:
    """What one proposal of a wave came to."""

    wave: str
    index: int
    outcome: PatchOutcome | None
    """None when the proposal was skipped (covered by an earlier patch)."""
    unmasked: list[Failure] = field(default_factory=list)
    unit_compiles: int = 0
    load_checks: int = 0
    loads_clean: bool = False
    kind: str = ""
    file: str | None = None
    """The failure's kind and file (what the patch events name)."""
    checked: bool = True
    """False when no check ran (rejected in review)."""
    message: str = ""
    """The commit message of a kept patch (so a kill before the commit can still commit it)."""

    def __post_init__(self) -> None:
        # read back from the JSON lines
        self.outcome = PatchOutcome.coerce(self.outcome) if self.outcome is not None else None
        self.unmasked = [Failure.coerce(f) for f in self.unmasked]

    @property
    def kept(self) -> bool:
        return self.outcome is not None and self.outcome.kept


class WaveJournal:
    """Append-only JSON lines under the run dir; a torn last line (killed mid-write) is ignored."""

    def __init__(self, path: Path):
        self.path = path

    def record(self, entry: Entry) -> None:
        """Append one entry and force it to disk before the caller commits anything."""
        line = json.dumps(asdict(entry), default=str) + "\n"
        with self.path.open("a") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())

    def entries(self, wave: str) -> list[Entry]:
        """The entries of one wave, in the order they were recorded."""
        if not self.path.is_file():
            return []
        out = []
        for line in self.path.read_text(errors="replace").splitlines():
            try:
                data = json.loads(line)
            except json.JSONDecodeError:
                continue  # the process died while writing this line: that proposal was not finished
            if data.get("wave") == wave:
                out.append(Entry(**data))
        return out


def restore_commits(repo_dir: str, start: str, entries: list[Entry]) -> list[str]:
    """Put the clone at the last kept patch of the journaled entries and return each kept entry's commit
    (oldest first). Commits already made are reused; a kept entry whose commit never happened is
    committed now from its recorded diff; edits of an unfinished proposal are discarded."""
    repo = Path(repo_dir)
    made = gitops.git(repo, "rev-list", "--reverse", f"{start}..HEAD").split()
    kept = [e for e in entries if e.kept]
    shas = made[: len(kept)]
    gitops.reset_hard(repo, shas[-1] if shas else start)  # ignored build outputs stay
    for entry in kept[len(shas) :]:
        if entry.outcome is None:
            continue  # kept entries always have an outcome
        proposal = entry.outcome.proposal
        apply_diff(repo, proposal.diff)
        shas.append(gitops.commit_files(repo, proposal.files, entry.message))
    return shas
