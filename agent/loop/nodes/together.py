"""A wave's compile-side proposals that touch different units, validated together (issue #18 item 2).

Applied at once, the union of their units compiled in one parallel round (hipcc and nvcc, through the
run's compile services), each proposal judged on its own units. A clean one is kept and committed alone,
with its own evidence; one that is not is reverted and checked alone afterwards, as before, so a bad
proposal never sinks the good ones. Proposals that share a unit, touch Python, or whose diff does not
apply are left to the one-by-one path.
"""

from __future__ import annotations

from pathlib import Path

from agent.loop.nodes.checks import Verdict, addressed, judge_compile
from agent.loop.nodes.env import RunEnv
from agent.loop.state import PortState
from agent.patch.units import touched_units
from tools.records import Failure, Proposal


def disjoint_members(
    repo: Path, sources: list[str] | None, candidates: list[tuple[int, Proposal]]
) -> list[int]:
    """The indices of the first proposals whose touched files and units no earlier member touches (in wave
    order); empty unless two or more qualify."""
    units_taken: set[str] = set()
    files_taken: set[str] = set()
    members = []
    for index, proposal in candidates:
        files = set(proposal.files)
        if any(f.endswith(".py") for f in files) or files & files_taken:
            continue
        units = set(touched_units(repo, sorted(files), sources))
        if not units or units & units_taken:
            continue
        members.append(index)
        units_taken |= units
        files_taken |= files
    return members if len(members) > 1 else []


def validate_together(
    state: PortState, env: RunEnv, candidates: list[tuple[int, Proposal]], open_failures: list[Failure]
) -> tuple[dict[int, Verdict], dict[int, int]]:
    """The verdicts the group decided (a kept member stays applied, uncommitted: the caller commits each
    alone), and the unit compiles spent on members that were not clean (the caller checks those alone)."""
    from agent.patch.validate import Toolchains, Validator

    if env.job.strategy == "naive" or state.failure_stage != "build" or len(candidates) < 2:
        return {}, {}
    repo = Path(state.repo_dir)
    with env.clock.span("unit compile"):
        tools = Toolchains.from_profile(env.sandbox(), None, env.arch, env.profile, env.compilers())
        members = disjoint_members(repo, tools.sources, candidates)
        proposals = dict(candidates)
        group: list[tuple[Proposal, Failure | None]] = [
            (proposals[i], addressed(proposals[i])) for i in members
        ]
        validator = Validator(repo, tools)
        later = [p for i, p in candidates if i not in members]  # checked one by one after the group
        outcomes = validator.validate_together(group, later) if members else None
    if outcomes is None:
        return {}, {}
    env.observer.emit("note", message=f"{len(members)} proposals touch different units: checked together")
    judged: dict[int, Verdict] = {}
    spent: dict[int, int] = {}
    for index, outcome in zip(members, outcomes, strict=True):
        if not outcome.kept:
            spent[index] = sum(1 for c in outcome.checks if c.name.startswith(("hipcc", "nvcc")))
            continue
        # its own lines failing in a unit that still fails reverts it: the verdict it would get alone
        judged[index] = judge_compile(env, validator, outcome, open_failures)
    return judged, spent
