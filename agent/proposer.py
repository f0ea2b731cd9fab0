"""The proposer boundary the loop calls: rules first, then (when configured) an LLM.

A `Proposer` turns one `Failure` into a `Proposal` (a unified diff) or declines with None, leaving
its reason in `last_reason`. `usage` reports what it spent (zeros for rules).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from tools.records import Failure, Proposal


@dataclass
class ProposerUsage:
    """What a proposer spent: tokens in/out, calls, and cost in USD (None = unknown)."""

    tokens_in: int = 0
    tokens_out: int = 0
    calls: int = 0
    cost_usd: float | None = None


@runtime_checkable
class Proposer(Protocol):
    """Anything that proposes a patch for a failure in a workspace (agent.rules.base.Workspace)."""

    name: str
    last_reason: str

    def propose(self, failure: Failure, ws: Any, feedback: str | None = None) -> Proposal | None: ...

    def usage(self) -> ProposerUsage: ...


class RulesProposer:
    """The deterministic playbook of agent.rules (engineer R): the first proposal any fixer makes."""

    name = "rules"

    def __init__(self) -> None:
        self.last_reason = ""
        self.environment = False
        """True when a fixer declined because the failure is the environment's, not the code's."""

    def propose(self, failure: Failure, ws: Any, feedback: str | None = None) -> Proposal | None:
        from agent.rules import fixers_for, propose_for  # imports every fixer module: keep it lazy

        self.environment = False
        if not fixers_for(failure.kind):
            self.last_reason = f"no rule for kind {failure.kind}"
            return None
        result = propose_for(failure, ws)
        if result.proposals:
            self.last_reason = ""
            return result.proposals[0]
        self.environment = result.environment
        self.last_reason = "; ".join(result.declines) or f"the rules for {failure.kind} proposed nothing"
        return None

    def usage(self) -> ProposerUsage:
        return ProposerUsage()


class LLMProposerAdapter:
    """Wraps agent.llm_proposer.LLMProposer (engineer L) in the Proposer protocol."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.name = inner.name

    @property
    def last_reason(self) -> str:
        return self.inner.last_reason

    def propose(self, failure: Failure, ws: Any, feedback: str | None = None) -> Proposal | None:
        return self.inner.propose(failure, ws, feedback)

    def use_compiler(self, compile_check: Any) -> None:
        """Give the model's compile_check tool the run's ROCm compiler: (root, rel) -> (ok, output)."""
        self.inner.compile_check = compile_check

    def usage(self) -> ProposerUsage:
        u = self.inner.usage
        return ProposerUsage(tokens_in=u.prompt_tokens, tokens_out=u.completion_tokens, calls=u.calls,
                             cost_usd=u.cost_usd)


def llm_proposer_for(job_llm: Any, model: Any | None = None) -> LLMProposerAdapter | None:
    """The LLM proposer for a job's `llm:` section, or None when no endpoint is configured.

    `model` is what tests pass (a ScriptedModel) exactly where a real OpenAIModel goes.
    """
    from agent.llm import EndpointConfig, Pricing, model_from_config
    from agent.llm_proposer import LLMProposer

    pricing = Pricing(job_llm.price_in_per_mtok, job_llm.price_out_per_mtok)
    if model is None:
        if not job_llm.model or not job_llm.endpoint():
            return None
        model = model_from_config(EndpointConfig(model=job_llm.model, base_url=job_llm.endpoint(),
                                                 api_key_env=job_llm.api_key_env, pricing=pricing))
        if model is None:
            return None
    from agent.llm import Usage
    return LLMProposerAdapter(LLMProposer(model, max_turns=job_llm.max_turns, usage=Usage(pricing=pricing)))
