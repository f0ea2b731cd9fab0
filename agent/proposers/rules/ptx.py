"""inline_ptx: known forms get their ROCm spelling (ptx_forms); the rest is declined with why (tensor-core
PTX needs an MFMA rewrite)."""

from __future__ import annotations

import re

from agent.proposers.rules.base import Decline, Workspace, make_proposal, register
from agent.proposers.rules.compat_header import (
    NEW_HEADER,
    compat_location,
    find_compat,
    include_spelling,
    includes_transitively,
    insert_block,
)
from agent.proposers.rules.ptx_forms import rewrite_known_ptx
from agent.proposers.rules.ptx_translate import HELPER_INCLUDES, HELPERS, helpers_used
from agent.proposers.rules.warp import add_include
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
        text += "\n".join(lines[max(0, failure.line - 1 - _CONTEXT) : failure.line + _CONTEXT])
    return text


def _with_helpers(ws: Workspace, file: str, old: str, new: str) -> dict[str, tuple[str | None, str]]:
    """The file's edit plus, when it calls rocm_compat_* helpers, their definitions in the compat header
    (the repo's own, else one new rocm_compat.h) and the file's include of it."""
    used = helpers_used(new)
    if not used:
        return {file: (old, new)}
    compat = find_compat(ws, file) or compat_location(ws, file)
    header = ws.read(compat)
    missing = [name for name in used if f"{name}(" not in (header or "")]
    edits: dict[str, tuple[str | None, str]] = {}
    if missing:
        includes = ["cstdint", *sorted({HELPER_INCLUDES[n] for n in missing if n in HELPER_INCLUDES})]
        block = (
            "// PTX as plain code on ROCm (the CUDA branch of each call site keeps its asm).\n#ifdef USE_ROCM\n"
            + "".join(f"#include <{h}>\n" for h in includes)
            + "".join(HELPERS[n] for n in missing)
            + "#endif\n"
        )
        edits[compat] = (
            header,
            insert_block(header, block) if header is not None else NEW_HEADER.format(body=block),
        )
    if not includes_transitively(ws, file, compat):
        new = add_include(new, include_spelling(compat, file))
    edits[file] = (old, new)
    return edits


class InlinePtxDecliner:
    """Says why inline PTX is left to a human or the LLM."""

    family = "ptx"
    kinds: tuple[str, ...] = ("inline_ptx",)

    def propose(self, failure: Failure, ws: Workspace) -> Proposal | None:
        rel = failure.file
        source = ws.read(rel) if rel else None
        if rel and source is not None:
            new, done = rewrite_known_ptx(source)
            if done:
                edits = _with_helpers(ws, rel, source, new)
                return make_proposal(
                    failure,
                    self.family,
                    edits,
                    (
                        f"{failure.file}: inline PTX with a known ROCm form rewritten under `#ifdef USE_ROCM` "
                        f"({', '.join(d.rstrip(';') for d in done)}); "
                        "the CUDA branch keeps the asm statement as it was."
                    ),
                    ws=ws,
                )
        text = _nearby(ws, failure)
        tc = TENSOR_CORE.search(text)
        if tc:
            raise Decline(
                f"tensor-core PTX ({tc.group(1)}) has no HIP spelling: it needs an MFMA/rocWMMA rewrite "
                f"or excluding the kernel on ROCm, which is a judgment, not a rule"
            )
        bits = BIT_LOGIC.search(text)
        if bits:
            raise Decline(
                f"bit-logic PTX ({bits.group(1)}) outside the translated subset (lop3, prmt default mode) "
                f"should become plain C on ROCm by hand or by the LLM proposer"
            )
        raise Decline("inline PTX with no known mapping; needs a human or the LLM proposer")


register(InlinePtxDecliner())
