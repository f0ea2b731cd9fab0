"""The rules playbook's registry: one `Rule` per failure family, and the diff helpers rules share.

A rule is an entry of the playbook, not a proposer: `RulesProposer` (agent.proposers.base) asks the
rules for a failure's kind and is the one Proposer the loop sees. A rule's `propose` returns None when
the failure is not its business and raises `Decline` when it is but no safe mechanical patch exists
(the reason is recorded for the user and the LLM). Workspace and Decline are the proposer protocol's.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from agent.proposers.base import Decline, Workspace
from tools.records import Failure, Proposal


@runtime_checkable
class Rule(Protocol):
    """One failure family's rule: `propose(failure, ws)` -> Proposal, None (not mine) or raise Decline."""

    family: str
    kinds: tuple[str, ...]

    def propose(self, failure: Failure, ws: Workspace) -> Proposal | None: ...


_REGISTRY: list[Rule] = []


def register(fixer: Rule) -> Rule:
    """Add a fixer to the playbook (modules call this at import; agent.proposers.rules imports them all)."""
    if not any(f.family == fixer.family for f in _REGISTRY):
        _REGISTRY.append(fixer)
    return fixer


def all_fixers() -> list[Rule]:
    """Every registered fixer, in registration order."""
    return list(_REGISTRY)


def fixers_for(kind: str) -> list[Rule]:
    """The fixers that handle a failure kind."""
    return [f for f in _REGISTRY if kind in f.kinds]


@dataclass
class RuleResult:
    """What the playbook made of one failure: proposals and the reasons fixers declined."""

    failure: Failure
    proposals: list[Proposal] = field(default_factory=list)
    declines: list[str] = field(default_factory=list)
    environment: bool = False


def propose_for(failure: Failure, ws: Workspace) -> RuleResult:
    """Ask every fixer for the failure's kind; collect proposals and decline reasons."""
    result = RuleResult(failure)
    for fixer in fixers_for(failure.kind):
        try:
            proposal = fixer.propose(failure, ws)
        except Decline as exc:
            result.declines.append(f"{fixer.family}: {exc.reason}")
            result.environment = result.environment or exc.environment
            continue
        if proposal is not None:
            result.proposals.append(proposal)
    return result


# --- diffs ---------------------------------------------------------------------------------

_NO_EOL = "\\ No newline at end of file\n"


def _diff_lines(old: str, new: str, fromfile: str, tofile: str) -> list[str]:
    old_lines = old.splitlines(keepends=True)
    new_lines = new.splitlines(keepends=True)
    out: list[str] = []
    for line in difflib.unified_diff(old_lines, new_lines, fromfile, tofile, n=3):
        if line.startswith(("---", "+++")):
            out.append(line.rstrip("\n") + "\n")
        elif line.endswith("\n"):
            out.append(line)
        else:  # last line of a file without a trailing newline: git needs the marker
            out.append(line + "\n" + _NO_EOL)
    return out


def file_diff(rel: str, old: str | None, new: str) -> str:
    """A git-style unified diff for one file; `old=None` makes it a new file."""
    if old is None:
        head = f"diff --git a/{rel} b/{rel}\nnew file mode 100644\n"
        return head + "".join(_diff_lines("", new, "/dev/null", f"b/{rel}"))
    if old == new:
        return ""
    head = f"diff --git a/{rel} b/{rel}\n"
    return head + "".join(_diff_lines(old, new, f"a/{rel}", f"b/{rel}"))


def make_proposal(
    failure: Failure,
    family: str,
    edits: dict[str, tuple[str | None, str]],
    rationale: str,
    ws: Workspace | None = None,
) -> Proposal | None:
    """A Proposal from {rel_path: (old_text_or_None, new_text)}; None when nothing changes.

    With the workspace, the changed lines are formatted in the repo's style first (agent.proposers.rules.style)."""
    if ws is not None:
        from agent.proposers.rules.style import restyle

        edits = {rel: (old, restyle(ws.root, rel, old, new)) for rel, (old, new) in edits.items()}
    parts = [(rel, file_diff(rel, old, new)) for rel, (old, new) in sorted(edits.items())]
    parts = [(rel, d) for rel, d in parts if d]
    if not parts:
        return None
    return Proposal(
        failure_signature=failure.key,
        proposer=f"rule:{family}",
        diff="".join(d for _, d in parts),
        rationale=rationale,
        files=[rel for rel, _ in parts],
    )
