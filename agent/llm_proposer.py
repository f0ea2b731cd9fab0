"""The LLM proposer: a capped tool-calling conversation per failure that ends in a Proposal."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from agent.context import context_pack
from agent.llm import Model, Usage
from agent.llm_tools import MAX_EDIT_BYTES, TOOL_SCHEMAS, ToolBox
from agent.rules.base import Workspace
from tools import git as gitops
from tools.records import Failure, Proposal

PROMPT = (Path(__file__).parent / "prompts" / "llm_fixer.md").read_text()


class LLMProposer:
    """Asks a Model to fix one failure with repo tools; edits become a unified diff, then are undone
    in the working tree so validation applies them like any other proposal."""

    def __init__(self, model: Model, *, max_turns: int = 12, usage: Usage | None = None,
                 compile_check: Callable[[Path, str], tuple[bool, str]] | None = None):
        self.model = model
        self.name = f"llm:{model.name}"
        self.max_turns = max_turns
        self.usage = usage or Usage()
        self.compile_check = compile_check
        self.last_reason = ""

    def propose(self, failure: Failure, ws: Workspace, feedback: str | None = None) -> Proposal | None:
        """Run the conversation; None when the model declines, gives up, or hits the turn cap."""
        root = ws.root
        box = ToolBox(root, self.compile_check)
        user = context_pack(failure, root)
        if feedback:
            user += f"\n\n## An earlier attempt failed validation\n{feedback}"
        messages = [{"role": "system", "content": PROMPT}, {"role": "user", "content": user}]
        try:
            for _ in range(self.max_turns):
                reply = self.model.complete(messages, TOOL_SCHEMAS)
                self.usage.add(reply)
                messages.append(reply.as_message())
                if not reply.tool_calls:
                    messages.append({"role": "user", "content": "Use the tools: edit, then call finish or decline."})
                    continue
                for call in reply.tool_calls:
                    if call.name == "decline":
                        self.last_reason = f"declined: {call.arguments.get('reason', '')}"
                        return None
                    if call.name == "finish":
                        return self._proposal(failure, root, box, call.arguments.get("rationale", ""))
                    result = box.call(call.name, call.arguments)
                    messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
            self.last_reason = f"no fix within {self.max_turns} turns"
            return None
        finally:
            _undo(root, box)

    def _proposal(self, failure: Failure, root: Path, box: ToolBox, rationale: str) -> Proposal | None:
        files = box.edited + box.created
        if not files:
            self.last_reason = "finished without any edit"
            return None
        try:
            diff = gitops.diff_files(root, box.edited, box.created)
        except gitops.GitError as exc:
            self.last_reason = f"cannot diff the edits: {exc}"
            return None
        if len(diff.encode()) > MAX_EDIT_BYTES:
            self.last_reason = f"the edits make a {len(diff.encode())}-byte diff, over the {MAX_EDIT_BYTES}-byte cap"
            return None
        if not isinstance(rationale, str):
            rationale = str(rationale)
        return Proposal(failure_signature=failure.signature, proposer=self.name, diff=diff,
                        rationale=rationale.strip() or "LLM edit", files=files)


def _undo(root: Path, box: ToolBox) -> None:
    """Put the working tree back: the diff is the proposal now, validation applies it."""
    if box.edited:
        gitops.git(root, "checkout", "--", *box.edited)
    for rel in box.created:
        (root / rel).unlink(missing_ok=True)
