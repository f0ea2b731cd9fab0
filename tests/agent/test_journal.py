"""The wave journal: a kept patch recorded but killed before its commit is committed on resume, once."""

from __future__ import annotations

import git

from agent.loop.journal import Entry, WaveJournal, restore_commits, wave_key
from tools.records import PatchOutcome, Proposal


def _diff(path: str, old: str, new: str) -> str:
    return f"--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-{old}\n+{new}\n"


def _kept(key: str, index: int, path: str, old: str, new: str) -> Entry:
    proposal = Proposal(f"s{index}", "rule:t", _diff(path, old, new), "why", [path])
    return Entry(key, index, PatchOutcome(proposal, applied=True, kept=True), message=f"fix {path}")


def test_a_kept_entry_without_its_commit_is_committed_from_the_journal(git_repo, tmp_path):
    root = git_repo({"a.cu": "old a\n", "b.cu": "old b\n"})
    repo = git.Repo(root)
    start = repo.head.commit.hexsha
    key = wave_key(1, start)
    journal = WaveJournal(tmp_path / "journal.jsonl")
    first, second = _kept(key, 0, "a.cu", "old a", "new a"), _kept(key, 1, "b.cu", "old b", "new b")
    journal.record(first)
    (root / "a.cu").write_text("new a\n")
    repo.git.commit("-qam", "fix a.cu", author="t <t@example.com>")  # committed before the kill
    journal.record(second)  # recorded, then killed before its commit; half an edit left behind
    (root / "b.cu").write_text("half\n")
    with journal.path.open("a") as fh:
        fh.write('{"wave": "' + key + '", "index": 2, "outco')  # torn by the kill: ignored

    entries = journal.entries(key)
    assert entries == [first, second]  # read back as the records that were written
    shas = restore_commits(str(root), start, entries)
    assert [e.index for e in entries] == [0, 1]
    assert len(shas) == 2 and shas[0] == repo.commit("HEAD~1").hexsha and shas[1] == repo.head.commit.hexsha
    assert [c.summary for c in repo.iter_commits(f"{start}..HEAD")] == ["fix b.cu", "fix a.cu"]
    assert (root / "b.cu").read_text() == "new b\n" and not repo.is_dirty()
    # Restoring again (a second kill) reuses both commits.
    assert restore_commits(str(root), start, entries) == shas
