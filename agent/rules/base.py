"""The Fixer protocol, the Workspace a fixer reads, declines with reasons, and diff helpers.

A fixer turns one `Failure` into a `Proposal` (a `git apply`-able unified diff) or nothing.
`propose` returns None when the failure is not its business and raises `Decline` when it is
its business but no safe mechanical patch exists (the reason is recorded for the user/LLM).
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from tools.records import Failure, Proposal

if TYPE_CHECKING:
    from agent.profiles import Profile

DEFAULT_ARCH = "gfx942"


@dataclass
class Workspace:
    """What a fixer may read: the repo checkout and what is known about the target."""

    root: Path
    """The repo checkout (its working tree is what diffs apply to)."""
    profile: Profile | None = None
    checkpoint: Path | None = None
    """A model checkpoint directory (safetensors + index), for weight-name fixers."""
    expected_params: dict[str, dict[str, Any]] | None = None
    """Framework parameter name -> {"shape": [...], "dtype": "..."}."""
    target_arch: str = DEFAULT_ARCH
    """The ROCm gfx target (gfx942 = MI300, gfx950 = MI355, gfx90a = MI250)."""

    def __post_init__(self) -> None:
        self.root = Path(self.root).resolve()

    def read(self, rel: str) -> str | None:
        """The text of a repo-relative file, or None when it does not exist."""
        path = self.root / rel
        if not path.is_file():
            return None
        return path.read_text(encoding="utf-8", errors="surrogateescape")


class Decline(Exception):
    """A fixer recognises the failure but will not patch it; `reason` says why (one line)."""

    def __init__(self, reason: str, *, environment: bool = False):
        super().__init__(reason)
        self.reason = reason
        self.environment = environment
        """True when the failure is the toolchain's/environment's, not the code's."""


@runtime_checkable
class Fixer(Protocol):
    """One failure family's rule: `propose(failure, ws)` -> Proposal, None (not mine) or raise Decline."""

    family: str
    kinds: tuple[str, ...]

    def propose(self, failure: Failure, ws: Workspace) -> Proposal | None: ...


_REGISTRY: list[Fixer] = []


def register(fixer: Fixer) -> Fixer:
    """Add a fixer to the playbook (modules call this at import; agent.rules imports them all)."""
    if not any(f.family == fixer.family for f in _REGISTRY):
        _REGISTRY.append(fixer)
    return fixer


def all_fixers() -> list[Fixer]:
    """Every registered fixer, in registration order."""
    return list(_REGISTRY)


def fixers_for(kind: str) -> list[Fixer]:
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


def make_proposal(failure: Failure, family: str, edits: dict[str, tuple[str | None, str]],
                  rationale: str, ws: Workspace | None = None) -> Proposal | None:
    """A Proposal from {rel_path: (old_text_or_None, new_text)}; None when nothing changes.

    With the workspace, the changed C/C++ lines are formatted with the repo's .clang-format first."""
    if ws is not None:
        from agent.rules.style import clang_format
        edits = {rel: (old, clang_format(ws.root, rel, old, new)) for rel, (old, new) in edits.items()}
    parts = [(rel, file_diff(rel, old, new)) for rel, (old, new) in sorted(edits.items())]
    parts = [(rel, d) for rel, d in parts if d]
    if not parts:
        return None
    return Proposal(failure_signature=failure.signature or f"{failure.kind}:{failure.file}:{failure.symbol}",
                    proposer=f"rule:{family}", diff="".join(d for _, d in parts),
                    rationale=rationale, files=[rel for rel, _ in parts])
