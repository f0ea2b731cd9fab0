"""Withdrawal judges a patch by the units that compile: a commit that only touched the compat header of a
header-unit that still fails is withdrawn too (it was kept on the branch before), and the branch is
rebuilt with the proven commits only."""

from __future__ import annotations

import subprocess

from agent.patch.fix import FixRecord
from agent.patch.withdraw import unproven, withdraw_unproven
from tests.agent.rules.helpers import failure
from tools.records import PatchOutcome, Proposal


def _git(root, *args) -> str:
    env = ["-c", "user.name=t", "-c", "user.email=t@example.com"]
    return subprocess.run(
        ["git", *env, *args], cwd=root, capture_output=True, text=True, check=True
    ).stdout.strip()


def _commit(root, rel: str, text: str, records: list, unit: str) -> None:
    (root / rel).write_text(text)
    _git(root, "add", rel)
    _git(root, "commit", "-qm", f"edit {rel}")
    prop = Proposal(failure_signature=rel, proposer="rule:t", diff="", rationale="", files=[rel])
    outcome = PatchOutcome(proposal=prop, applied=True, kept=True, commit=_git(root, "rev-parse", "HEAD"))
    records.append(FixRecord(failure("compile_error", unit, rel), "kept", outcomes=[outcome]))


def test_compat_header_only_commit_of_a_failing_header_unit_is_withdrawn(git_repo):
    root = git_repo(
        {
            "fi/stuck.cuh": '#include "rocm_compat.h"\n',  # a header compiled as its own unit, still failing
            "fi/good.cu": '#include "util.h"\n',
            "fi/util.h": "",
            "fi/rocm_compat.h": "",
        }
    )
    base = _git(root, "rev-parse", "HEAD")
    _git(root, "checkout", "-qb", "rocport/fix-x")
    records: list = []
    _commit(root, "fi/rocm_compat.h", "#define A 1\n", records, "fi/stuck.cuh")  # reaches only stuck.cuh
    _commit(root, "fi/util.h", "#define B 1\n", records, "fi/good.cu")  # reaches good.cu, which compiles
    assert unproven(root, records, {"fi/good.cu"}) == {records[0].outcomes[0].commit}
    done = withdraw_unproven(root, base, "rocport/fix-x", records, {"fi/good.cu"})
    assert done.partial_branch == "rocport/fix-x-partial" and not done.blocked
    assert _git(root, "log", "--format=%s", f"{base}..HEAD").splitlines() == ["edit fi/util.h"]
    assert records[0].status == "withdrawn" and records[1].outcomes[0].commit == _git(
        root, "rev-parse", "HEAD"
    )
    assert "edit fi/rocm_compat.h" in _git(root, "log", "--format=%s", "rocport/fix-x-partial")


def test_an_error_fixed_by_a_withdrawn_commit_is_withdrawn_with_it(git_repo):
    """A fixed_earlier record shares the kept record's outcome: both say withdrawn, neither keeps a sha."""
    root = git_repo({"fi/stuck.cuh": '#include "rocm_compat.h"\n', "fi/rocm_compat.h": ""})
    base = _git(root, "rev-parse", "HEAD")
    _git(root, "checkout", "-qb", "rocport/fix-y")
    records: list = []
    _commit(root, "fi/rocm_compat.h", "#define A 1\n", records, "fi/stuck.cuh")
    _git(root, "commit", "-q", "--allow-empty", "-m", "a proven one")  # the branch keeps something
    records.append(
        FixRecord(failure("inline_ptx", "fi/stuck.cuh", "b"), "fixed_earlier", outcomes=records[0].outcomes)
    )
    sha = records[0].outcomes[0].commit
    withdraw_unproven(root, base, "rocport/fix-y", records, set())
    assert [r.status for r in records] == ["withdrawn", "withdrawn"]
    assert all(sha[:10] in r.reasons[0] for r in records) and records[1].outcomes[0].commit == ""
