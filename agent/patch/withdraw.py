"""Patches whose units all still fail come off the work branch: the branch holds only proven patches.

A patch that fixed one error of a unit that still fails (a thread-block cluster, PTX with no ROCm form...)
proves nothing the user could send upstream. At the end of a session every kept C/C++ patch is checked
against the units that compile: when none of them is or includes (transitively) a file it touches, it is
withdrawn. The
branch is rebuilt from its base with the other commits, in order; the full history stays on
`<branch>-partial` for whoever continues the port. Dropping a patch cannot change a unit that compiles
(such a unit would have been one of the patch's touched units). When a kept commit does not apply
without a withdrawn one, nothing is withdrawn and the caller says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from agent.patch.fix import FixError, FixRecord, git
from agent.patch.units import HEADER_EXTS, SOURCE_EXTS, include_graph
from tools import git as gitops


@dataclass
class Withdrawal:
    """What came off the branch, and where the full history is."""

    withdrawn: list[str] = field(default_factory=list)
    """Old shas of the withdrawn commits."""
    partial_branch: str = ""
    blocked: str = ""
    """Why nothing was withdrawn although some patches are unproven ('' when not blocked)."""


def _closure(graph: dict[str, set[str]], unit: str) -> set[str]:
    """`unit` and every repo file it includes, transitively."""
    seen, todo = {unit}, [unit]
    while todo:
        for dep in graph.get(todo.pop(), set()) - seen:
            seen.add(dep)
            todo.append(dep)
    return seen


def unproven(root: Path, records: list[FixRecord], compiling: set[str]) -> set[str]:
    """Shas of kept commits touching C/C++ files that no compiling unit reaches (itself or its includes).
    A commit that only touches a compat header counts through the units that include it."""
    graph = include_graph(root)
    reached: set[str] = set()
    for unit in compiling:
        reached |= _closure(graph, unit)
    out: set[str] = set()
    for rec in records:
        for o in rec.outcomes:
            cpp = [f for f in o.proposal.files if f.endswith(SOURCE_EXTS + HEADER_EXTS)] if o.commit else []
            if cpp and o.commit and not reached.intersection(cpp):
                out.add(o.commit)
    return out


def withdraw_unproven(
    root: Path, base: str, branch: str, records: list[FixRecord], failing: set[str]
) -> Withdrawal:
    """Rebuild `branch` from `base` without the unproven commits; records' statuses and shas follow."""
    drop = unproven(root, records, failing)
    if not drop:
        return Withdrawal()
    order = git(root, "rev-list", "--reverse", f"{base}..{branch}").split()
    tip, partial = order[-1], f"{branch}-partial"
    git(root, "branch", "-q", "-f", partial, tip)
    gitops.reset_hard(root, base)
    new_sha: dict[str, str] = {}
    for sha in order:
        if sha in drop:
            continue
        try:
            git(root, "cherry-pick", "--allow-empty", sha)
        except FixError:
            gitops.run(root, "cherry-pick", "--abort", ok=range(256))
            gitops.reset_hard(root, tip)
            git(root, "branch", "-q", "-D", partial)
            return Withdrawal(blocked=f"a proven patch ({sha[:10]}) builds on an unproven one")
        new_sha[sha] = git(root, "rev-parse", "HEAD")
    # statuses first: a fixed_earlier record shares its outcome with the kept one, so shas change after
    for rec in records:
        for o in rec.outcomes:
            if o.commit in drop:
                rec.status = "withdrawn"
                rec.reasons.append(
                    f"its unit(s) still fail; the patch is kept on {partial} ({o.commit[:10]})"
                )
    for o in {id(o): o for rec in records for o in rec.outcomes}.values():
        o.commit = "" if o.commit in drop else new_sha.get(o.commit or "", o.commit)
    return Withdrawal(withdrawn=sorted(drop), partial_branch=partial)
