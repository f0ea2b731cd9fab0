"""The LLM proposer: a capped tool-calling conversation per failure that ends in a Proposal or a Decline."""

from __future__ import annotations

from pathlib import Path

from agent.proposers.base import Decline, ProposerUsage, UnitCompiler, Workspace
from agent.proposers.llm.context import context_pack
from agent.proposers.llm.model import Model, Usage
from agent.proposers.llm.tools import MAX_EDIT_BYTES, TOOL_SCHEMAS, ToolBox
from tools import git as gitops
from tools.records import Failure, Proposal

PROMPT = (Path(__file__).parent / "prompts" / "llm_fixer.md").read_text()


class LLMProposer:
    """Asks a Model to fix one failure with repo tools; edits become a unified diff, then are undone
    in the working tree so validation applies them like any other proposal."""

    def __init__(
        self,
        model: Model,
        *,
        max_turns: int = 12,
        usage: Usage | None = None,
        compile_check: UnitCompiler | None = None,
    ):
        self.model = model
        self.name = f"llm:{model.name}"
        self.max_turns = max_turns
        self.spent = usage or Usage()
        self.compile_check = compile_check
        """The compile_check tool when the workspace brings no unit compiler of its own."""

    def usage(self) -> ProposerUsage:
        u = self.spent
        return ProposerUsage(
            tokens_in=u.prompt_tokens, tokens_out=u.completion_tokens, calls=u.calls, cost_usd=u.cost_usd
        )

    def propose(self, failure: Failure, ws: Workspace, feedback: str | None = None) -> Proposal:
        """Run the conversation; Decline when the model declines, gives up, or hits the turn cap."""
        root = ws.root
        box = ToolBox(root, ws.compile_unit or self.compile_check)
        user = context_pack(failure, root)
        if feedback:
            user += f"\n\n## An earlier attempt failed validation\n{feedback}"
        messages = [{"role": "system", "content": PROMPT}, {"role": "user", "content": user}]
        try:
            for _ in range(self.max_turns):
                reply = self.model.complete(messages, TOOL_SCHEMAS)
                self.spent.add(reply)
                messages.append(reply.as_message())
                if not reply.tool_calls:
                    messages.append(
                        {"role": "user", "content": "Use the tools: edit, then call finish or decline."}
                    )
                    continue
                for call in reply.tool_calls:
                    if call.name == "decline":
                        raise Decline(f"declined: {call.arguments.get('reason', '')}")
                    if call.name == "finish":
                        return self._proposal(failure, root, box, call.arguments.get("rationale", ""))
                    result = box.call(call.name, call.arguments)
                    messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
            raise Decline(f"no fix within {self.max_turns} turns")
        finally:
            _undo(root, box)

    def _proposal(self, failure: Failure, root: Path, box: ToolBox, rationale: str) -> Proposal:
        files = box.edited + box.created
        if not files:
            raise Decline("finished without any edit")
        try:
            diff = gitops.diff_files(root, box.edited, box.created)
        except gitops.GitError as exc:
            raise Decline(f"cannot diff the edits: {exc}") from None
        if len(diff.encode()) > MAX_EDIT_BYTES:
            raise Decline(
                f"the edits make a {len(diff.encode())}-byte diff, over the {MAX_EDIT_BYTES}-byte cap"
            )
        if not isinstance(rationale, str):
            rationale = str(rationale)
        return Proposal(
            failure_signature=failure.key,
            proposer=self.name,
            diff=diff,
            rationale=rationale.strip() or "LLM edit",
            files=files,
        )


def _undo(root: Path, box: ToolBox) -> None:
    """Put the working tree back: the diff is the proposal now, validation applies it."""
    if box.edited:
        gitops.git(root, "checkout", "--", *box.edited)
    for rel in box.created:
        (root / rel).unlink(missing_ok=True)
