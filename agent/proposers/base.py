"""The one proposer protocol the port loop and `rocport fix` call: `propose(failure, ws, feedback)`
returns a `Proposal` (a `git apply`-able unified diff) or raises `Decline` with the reason.

Two implementations: `RulesProposer` (the deterministic playbook of agent.proposers.rules) and
`agent.proposers.llm.proposer.LLMProposer`. `usage()` reports what a proposer spent (zeros for rules).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from tools.records import Failure, Proposal

if TYPE_CHECKING:
    from agent.profiles import Profile

DEFAULT_ARCH = "gfx942"

UnitCompiler = Callable[[Path, str], tuple[bool, str]]
"""(repo root, repo-relative unit) -> (compiles, compiler output): one ROCm unit compile."""


@dataclass
class Workspace:
    """What a proposer may use: the repo checkout, what is known about the target, a unit compiler."""

    root: Path
    """The repo checkout (its working tree is what diffs apply to)."""
    profile: Profile | None = None
    checkpoint: Path | None = None
    """A model checkpoint directory (safetensors + index), for weight-name fixers."""
    expected_params: dict[str, dict[str, Any]] | None = None
    """Framework parameter name -> {"shape": [...], "dtype": "..."}."""
    target_arch: str = DEFAULT_ARCH
    """The ROCm gfx target (gfx942 = MI300, gfx950 = MI355, gfx90a = MI250)."""
    compile_unit: UnitCompiler | None = None
    """The run's ROCm compiler for one unit (the LLM's compile_check tool); None where there is none."""

    def __post_init__(self) -> None:
        self.root = Path(self.root).resolve()

    def read(self, rel: str) -> str | None:
        """The text of a repo-relative file, or None when it does not exist."""
        path = self.root / rel
        if not path.is_file():
            return None
        return path.read_text(encoding="utf-8", errors="surrogateescape")


class Decline(Exception):
    """A proposer has no patch for the failure; `reason` says why (one line)."""

    def __init__(self, reason: str, *, environment: bool = False):
        super().__init__(reason)
        self.reason = reason
        self.environment = environment
        """True when the failure is the toolchain's/environment's, not the code's: nobody patches it."""


@dataclass
class ProposerUsage:
    """What a proposer spent: tokens in/out, calls, and cost in USD (None = unknown)."""

    tokens_in: int = 0
    tokens_out: int = 0
    calls: int = 0
    cost_usd: float | None = None


@runtime_checkable
class Proposer(Protocol):
    """Anything that proposes a patch for one failure in a workspace."""

    name: str

    def propose(self, failure: Failure, ws: Workspace, feedback: str | None = None) -> Proposal:
        """A patch for `failure`; raises Decline when there is none. `feedback`: why an earlier one failed."""
        ...

    def usage(self) -> ProposerUsage:
        """What this proposer has spent so far."""
        ...


class RulesProposer:
    """The deterministic playbook of agent.proposers.rules: the first proposal any failure gets."""

    name = "rules"

    def propose(self, failure: Failure, ws: Workspace, feedback: str | None = None) -> Proposal:
        from agent.proposers.rules import fixers_for, propose_for  # imports every fixer module: keep it lazy

        if not fixers_for(failure.kind):
            raise Decline(f"no rule for kind {failure.kind}")
        result = propose_for(failure, ws)
        if result.proposals:
            return result.proposals[0]
        reason = "; ".join(result.declines) or f"the rules for {failure.kind} proposed nothing"
        raise Decline(reason, environment=result.environment)

    def usage(self) -> ProposerUsage:
        return ProposerUsage()


def llm_proposer_for(job_llm: Any, model: Any | None = None) -> Proposer | None:
    """The LLM proposer for a job's `llm:` section, or None when no endpoint is configured.

    `model` is what tests pass (a ScriptedModel) exactly where a real OpenAIModel goes.
    """
    from agent.proposers.llm.model import EndpointConfig, Pricing, Usage, model_from_config
    from agent.proposers.llm.proposer import LLMProposer

    pricing = Pricing(job_llm.price_in_per_mtok, job_llm.price_out_per_mtok)
    if model is None:
        if not job_llm.model or not job_llm.endpoint():
            return None
        model = model_from_config(
            EndpointConfig(
                model=job_llm.model,
                base_url=job_llm.endpoint(),
                api_key_env=job_llm.api_key_env,
                pricing=pricing,
            )
        )
        if model is None:
            return None
    return LLMProposer(model, max_turns=job_llm.max_turns, usage=Usage(pricing=pricing))
