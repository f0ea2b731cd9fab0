"""propose: one proposal per open failure (rules first, then the LLM), for the whole wave at once."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from agent.nodes.budget import budget_stop
from agent.nodes.env import RunEnv
from agent.state import PortState
from tools.records import ENVIRONMENT_KINDS, Failure, Proposal


def same_failure(a: dict, b: dict) -> bool:
    """Two records name the same problem: equal signatures, or the same kind/file/symbol."""
    if a.get("signature") and a.get("signature") == b.get("signature"):
        return True
    return (a["kind"], a.get("file"), a.get("symbol")) == (b["kind"], b.get("file"), b.get("symbol")) \
        and a.get("symbol") is not None


def workspace(state: PortState, env: RunEnv):
    """The rules' Workspace over the clone, with the checkpoint and expected params when known."""
    from agent.rules import Workspace

    expected = None
    if state.stages.get("load", {}).get("expected_params"):
        import json
        expected = json.loads(Path(state.stages["load"]["expected_params"]).read_text())
    checkpoint = Path(env.job.model.path) if env.job.model.path else None
    return Workspace(root=Path(state.repo_dir), profile=env.profile, checkpoint=checkpoint,
                     expected_params=expected, target_arch=env.arch)


def _feedback(state: PortState, failure: dict) -> str | None:
    """What went wrong with earlier patches for this failure (for the LLM's second try)."""
    prior = [o for o in state.outcomes if o["proposal"]["failure_signature"] == failure["signature"] and not o["kept"]]
    if not prior:
        return None
    last = prior[-1]
    failed = [c for c in last.get("checks", []) if not c["ok"]]
    detail = "\n".join(f"- {c['name']}: {c['detail'][:800]}" for c in failed)
    return f"The patch by {last['proposal']['proposer']} was reverted: {last['reason']}\n{detail}"


def _tried(state: PortState, failure: dict, proposer_name: str) -> int:
    prefix = "rule:" if proposer_name == "rules" else proposer_name
    return sum(1 for o in state.outcomes if o["proposal"]["failure_signature"] == failure["signature"]
               and not o["kept"] and o["proposal"]["proposer"].startswith(prefix))


def propose(state: PortState, env: RunEnv) -> dict:
    """Propose for every open failure of this wave; what nobody can fix is recorded with reasons."""
    ws = workspace(state, env)
    counters = dict(state.counters)
    unfixable = list(state.unfixable)
    known_unfixable = {u["signature"] for u in unfixable}
    proposals: list[dict] = []
    naive = env.job.strategy == "naive"
    # Failures a unit's first fatal error masked are found by the unit compiles of this wave's patches
    # (apply_check), not guessed from the static scan: the scan is reported, never patched from.
    for failure in state.failures:
        if naive and proposals:
            break  # the baseline patches one failure, then rebuilds or relaunches to see what is left
        sig = failure.get("signature") or failure["kind"]
        failure["signature"] = sig
        if sig in known_unfixable or any(p["failure_signature"] == sig for p in proposals):
            continue
        if failure["kind"] in ENVIRONMENT_KINDS:
            unfixable.append(_unfixable(failure, "environment problem: report it, do not patch code"))
            known_unfixable.add(sig)
            continue
        proposal, reasons = _ask(state, env, ws, failure, counters)
        if proposal is None:
            unfixable.append(_unfixable(failure, "; ".join(reasons) or "no proposer"))
            known_unfixable.add(sig)
            env.observer.emit("unfixable", kind=failure["kind"], file=failure.get("file"),
                              reason=unfixable[-1]["reason"])
            continue
        if any(p["diff"] == proposal.diff for p in proposals):
            continue  # one patch covers several failures (e.g. two CUDA headers in one file)
        proposals.append(proposal.to_dict() | {"kind": failure["kind"], "failure": failure})
    env.observer.emit("proposed", count=len(proposals), by=sorted({p["proposer"] for p in proposals}),
                      counters=counters)
    update = {"proposals": proposals, "unfixable": unfixable, "counters": counters,
              "iteration": state.iteration + 1}
    if not proposals:
        open_ = [f for f in state.failures if f.get("signature") in known_unfixable]
        update["stop_reason"] = (f"no fix proposed for {len(open_)} failure(s): "
                                 + "; ".join(f"{u['kind']} ({u['reason'][:120]})" for u in unfixable[-3:]))
    return update


def _ask(state: PortState, env: RunEnv, ws, failure: dict, counters: dict) -> tuple[Proposal | None, list[str]]:
    reasons: list[str] = []
    record = Failure.from_dict(failure)
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
        if hasattr(proposer, "use_compiler"):
            proposer.use_compiler(_unit_compiler(env, counters))
        before = proposer.usage()
        proposal = proposer.propose(record, ws, _feedback(state, failure))
        _account(counters, before, proposer.usage())
        if proposal is not None:
            return proposal, reasons
        reasons.append(f"{proposer.name}: {proposer.last_reason}")
        if getattr(proposer, "environment", False):
            break  # a rule recognised an environment problem; an LLM must not patch code for it
    return None, reasons


def _unit_compiler(env: RunEnv, counters: dict):
    """The LLM's compile_check tool: one unit with hipcc in the run's sandbox, counted as a unit compile."""
    from agent.validate import Toolchains, compile_hip_unit

    def compile_unit(root: Path, rel: str) -> tuple[bool, str]:
        counters["unit_compiles"] += 1
        result = compile_hip_unit(Toolchains.from_profile(env.sandbox(), None, env.arch, env.profile), root, rel)
        return result.ok, result.output

    return compile_unit


def _account(counters: dict, before, after) -> None:
    counters["tokens_in"] += after.tokens_in - before.tokens_in
    counters["tokens_out"] += after.tokens_out - before.tokens_out
    counters["llm_calls"] += after.calls - before.calls
    if after.cost_usd is not None:
        counters["cost_usd"] = (counters.get("cost_usd") or 0.0) + after.cost_usd - (before.cost_usd or 0.0)


def _unfixable(failure: dict, reason: str) -> dict:
    return {"signature": failure["signature"], "kind": failure["kind"], "file": failure.get("file"),
            "message": failure.get("message", ""), "reason": reason}
