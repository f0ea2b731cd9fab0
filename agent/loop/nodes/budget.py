"""Budgets and stall detection: the reasons a run ends cleanly before it is green."""

from __future__ import annotations

import time

from agent.loop.nodes.env import RunEnv
from agent.loop.state import PortState


def elapsed(state: PortState, env: RunEnv) -> float:
    """Wall seconds of the run so far, across resumes (time between processes does not count)."""
    return state.elapsed_s + (time.monotonic() - env.mark)


def budget_stop(state: PortState, env: RunEnv, next_step: str) -> str:
    """Why `next_step` must not run ('' when it may): a spent budget, named with its limit."""
    b = env.job.budgets
    c = state.counters
    if elapsed(state, env) >= b.wall_time_s:
        return f"budget: wall time {b.wall_time_s:.0f}s used up before {next_step}"
    if next_step == "build" and c["builds"] >= b.builds:
        return f"budget: {b.builds} build(s) used up before the rebuild"
    if next_step == "serve" and c["launches"] >= b.launches:
        return f"budget: {b.launches} server launch(es) used up"
    if next_step == "propose":
        if state.iteration >= b.iterations:
            return f"budget: {b.iterations} iteration(s) used up"
        if c["tokens_in"] + c["tokens_out"] >= b.llm_tokens and c["llm_calls"]:
            return f"budget: {b.llm_tokens} LLM tokens used up"
        if b.usd is not None and c.get("cost_usd") is not None and c["cost_usd"] >= b.usd:
            return f"budget: ${b.usd:.2f} LLM spend used up"
    return ""


def stalled(history: list[list[str]]) -> str:
    """'' unless the last two diagnoses found exactly the same failures."""
    if len(history) >= 2 and history[-1] and history[-1] == history[-2]:
        return (
            f"stalled: the same {len(history[-1])} failure(s) twice in a row ({', '.join(history[-1][:3])})"
        )
    return ""
