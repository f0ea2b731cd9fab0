"""propose: one proposal per open failure (rules first, then the LLM), for the whole wave at once."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from agent.loop.nodes.budget import budget_stop
from agent.loop.nodes.env import RunEnv
from agent.loop.nodes.first_wave import before_first_build
from agent.loop.state import PortState
from agent.proposers.base import Decline, UnitCompiler, Workspace
from tools.records import ENVIRONMENT_KINDS, Failure, Proposal


def workspace(state: PortState, env: RunEnv, compile_unit: UnitCompiler | None = None) -> Workspace:
    """The proposers' Workspace over the clone, with the checkpoint and expected params when known."""
    expected = None
    if state.stage("load").facts.get("expected_params"):
        expected = json.loads(Path(state.stage("load").facts["expected_params"]).read_text())
    checkpoint = Path(env.job.model.path) if env.job.model.path else None
    return Workspace(
        root=Path(state.repo_dir),
        profile=env.profile,
        checkpoint=checkpoint,
        expected_params=expected,
        target_arch=env.arch,
        compile_unit=compile_unit,
    )


def _feedback(state: PortState, failure: Failure) -> str | None:
    """What went wrong with earlier patches for this failure (for the LLM's second try)."""
    prior = [o for o in state.outcomes if o.proposal.failure_signature == failure.key and not o.kept]
    if not prior:
        return None
    last = prior[-1]
    failed = [c for c in last.checks if not c.ok]
    detail = "\n".join(f"- {c.name}: {c.detail[:800]}" for c in failed)
    return f"The patch by {last.proposal.proposer} was reverted: {last.reason}\n{detail}"


def _tried(state: PortState, failure: Failure, proposer_name: str) -> int:
    prefix = "rule:" if proposer_name == "rules" else proposer_name
    return sum(
        1
        for o in state.outcomes
        if o.proposal.failure_signature == failure.key
        and not o.kept
        and o.proposal.proposer.startswith(prefix)
    )


def propose(state: PortState, env: RunEnv) -> dict:
    """Propose for every open failure of this wave; what nobody can fix is recorded with reasons."""
    counters = dict(state.counters)
    ws = workspace(state, env, _unit_compiler(env, counters))
    unfixable = list(state.unfixable)
    known_unfixable = {u["signature"] for u in unfixable}
    proposals: list[Proposal] = []
    naive = env.job.strategy == "naive"
    # Failures a unit's first fatal error masked are found by the unit compiles of this wave's patches
    # (apply_check), not guessed from the static scan: the scan is reported, never patched from.
    for failure in state.failures:
        if naive and proposals:
            break  # the baseline patches one failure, then rebuilds or relaunches to see what is left
        sig = failure.key
        failure = replace(failure, signature=sig)  # a copy: state is never mutated in place
        if sig in known_unfixable or any(p.failure_signature == sig for p in proposals):
            continue
        if failure.kind in ENVIRONMENT_KINDS:
            unfixable.append(_unfixable(failure, "environment problem: report it, do not patch code"))
            known_unfixable.add(sig)
            continue
        proposal, reasons = _ask(state, env, ws, failure, counters)
        if proposal is None:
            unfixable.append(_unfixable(failure, "; ".join(reasons) or "no proposer"))
            known_unfixable.add(sig)
            env.observer.emit(
                "unfixable", kind=failure.kind, file=failure.file, reason=unfixable[-1]["reason"]
            )
            continue
        if any(p.diff == proposal.diff for p in proposals):
            continue  # one patch covers several failures (e.g. two CUDA headers in one file)
        proposals.append(replace(proposal, failure=failure))
    env.observer.emit(
        "proposed", count=len(proposals), by=sorted({p.proposer for p in proposals}), counters=counters
    )
    update = {
        "proposals": proposals,
        "unfixable": unfixable,
        "counters": counters,
        "iteration": state.iteration + 1,
    }
    if not proposals and not before_first_build(state):  # before it, the full build runs next
        open_ = [f for f in state.failures if f.key in known_unfixable]
        update["stop_reason"] = f"no fix proposed for {len(open_)} failure(s): " + "; ".join(
            f"{u['kind']} ({u['reason'][:120]})" for u in unfixable[-3:]
        )
    return update


def _ask(
    state: PortState, env: RunEnv, ws, failure: Failure, counters: dict
) -> tuple[Proposal | None, list[str]]:
    reasons: list[str] = []
    for proposer in env.proposers:
        limit = 1 if proposer.name == "rules" else 2  # a reverted rule patch would only repeat itself
        if _tried(state, failure, proposer.name) >= limit:
            reasons.append(f"{proposer.name}: its earlier patch was reverted")
            continue
        if proposer.name != "rules":
            stop = budget_stop(replace(state, counters=counters), env, "propose")
            if stop:
                reasons.append(stop)
                continue
        before = proposer.usage()
        try:
            return proposer.propose(failure, ws, _feedback(state, failure)), reasons
        except Decline as exc:
            reasons.append(f"{proposer.name}: {exc.reason}")
            if exc.environment:
                break  # a rule recognised an environment problem; an LLM must not patch code for it
        finally:
            _account(counters, before, proposer.usage())
    return None, reasons


def _unit_compiler(env: RunEnv, counters: dict):
    """The LLM's compile_check tool: one unit with hipcc in the run's sandbox, counted as a unit compile."""
    from agent.patch.validate import Toolchains, compile_hip_unit

    def compile_unit(root: Path, rel: str) -> tuple[bool, str]:
        counters["unit_compiles"] += 1
        result = compile_hip_unit(
            Toolchains.from_profile(env.sandbox(), None, env.arch, env.profile, env.compilers()), root, rel
        )
        return result.ok, result.output

    return compile_unit


def _account(counters: dict, before, after) -> None:
    counters["tokens_in"] += after.tokens_in - before.tokens_in
    counters["tokens_out"] += after.tokens_out - before.tokens_out
    counters["llm_calls"] += after.calls - before.calls
    if after.cost_usd is not None:
        counters["cost_usd"] = (counters.get("cost_usd") or 0.0) + after.cost_usd - (before.cost_usd or 0.0)


def _unfixable(failure: Failure, reason: str) -> dict:
    return {
        "signature": failure.signature,
        "kind": failure.kind,
        "file": failure.file,
        "message": failure.message,
        "reason": reason,
    }
