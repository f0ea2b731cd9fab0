"""inline_ptx: known forms get their ROCm spelling (ptx_forms); the rest is declined with why (tensor-core
PTX needs an MFMA rewrite)."""
from __future__ import annotations

import re

from agent.rules.base import Decline, Workspace, make_proposal, register
from agent.rules.ptx_forms import rewrite_known_ptx
from tools.records import Failure, Proposal

TENSOR_CORE = re.compile(r"\b(mma\.sync|wgmma|ldmatrix|stmatrix|cp\.async|tcgen05|mma\.sp)\b")
BIT_LOGIC = re.compile(r"\b(lop3|prmt|bfe|bfi|shf)\b")
_CONTEXT = 6


def _nearby(ws: Workspace, failure: Failure) -> str:
    """The failure's own text plus a few lines of source around it."""
    text = " ".join([failure.message or "", failure.excerpt or "", failure.symbol or ""])
    source = ws.read(failure.file) if failure.file else None
    if source and failure.line:
        lines = source.splitlines()
        text += "\n".join(lines[max(0, failure.line - 1 - _CONTEXT):failure.line + _CONTEXT])
    return text


class InlinePtxDecliner:
    """Says why inline PTX is left to a human or the LLM."""

    family = "ptx"
    kinds = ("inline_ptx",)

    def propose(self, failure: Failure, ws: Workspace) -> Proposal | None:
        source = ws.read(failure.file) if failure.file else None
        if source is not None:
            new, done = rewrite_known_ptx(source)
            if done:
                return make_proposal(failure, self.family, {failure.file: (source, new)}, (
                    f"{failure.file}: inline PTX with a known ROCm form rewritten under `#ifdef USE_ROCM` "
                    f"({', '.join(d.rstrip(';') for d in done)}); the CUDA branch keeps the asm statement as it was."), ws=ws)
        text = _nearby(ws, failure)
        tc = TENSOR_CORE.search(text)
        if tc:
            raise Decline(f"tensor-core PTX ({tc.group(1)}) has no HIP spelling: it needs an MFMA/rocWMMA rewrite "
                          f"or excluding the kernel on ROCm, which is a judgment, not a rule")
        bits = BIT_LOGIC.search(text)
        if bits:
            raise Decline(f"bit-logic PTX ({bits.group(1)}) should become plain C on ROCm; no mechanical rule "
                          f"yet (the LLM proposer handles it)")
        raise Decline("inline PTX with no known mapping; needs a human or the LLM proposer")


register(InlinePtxDecliner())
