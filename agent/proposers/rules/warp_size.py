"""warp_size: warp-size literals derived from the compat header's WARP_SIZE, the one source of truth.

Only kernels that use the hardware warp (warpSize-generic) are rewritten: a kernel written for
32-lane warps keeps 32-lane logical warps on ROCm (WARP32_* shuffles), so its `% 32` is right.
Rewrites that leave the CUDA tokens unchanged (`% 32` -> `% WARP_SIZE`, CUDA WARP_SIZE is 32) are made
in place; others (`& 31`, `>> 5`, constexpr `warpSize`, hipCUB-less `CUB_WARP_THREADS(0)`) get an
`#ifdef USE_ROCM` copy of the statement (adjacent ones share one block), the CUDA line kept in `#else`.
"""

from __future__ import annotations

import re

from agent.proposers.rules.base import Decline, Workspace, make_proposal, register
from agent.proposers.rules.compat_header import already_included, include_spelling, plan_compat
from agent.proposers.rules.cpp import line_platforms
from agent.proposers.rules.headers import target_file
from agent.proposers.rules.warp import add_include, lane_model
from tools.records import Failure, Proposal

# In place: CUDA's WARP_SIZE / WARP_FULL_MASK expand to exactly these literals.
SAME_TOKENS = [
    (re.compile(r"(%|/)(\s*)32\b(?![uU.])"), r"\1\2WARP_SIZE"),
    (re.compile(r"\[(\s*)32(\s*)\]"), r"[\1WARP_SIZE\2]"),
    (re.compile(r"\b0xffffffff\b(?![uU])"), "WARP_FULL_MASK"),
]
# Through an `#ifdef USE_ROCM` copy of the statement: the CUDA spelling differs.
# `x >> 5` -> `x / WARP_SIZE` only where no neighbouring operator binds between `>>` and `/`
# (`a + x >> 5` is `(a + x) >> 5`): a plain operand after `(`, `=`, `,`, ... and before `)`, `;`, ...
_SHIFT5 = re.compile(
    r"(?P<pre>(?:[(=,\[?:{;&|^!]|\breturn)\s*)(?P<opd>[A-Za-z_][\w.]*)"
    r"(?P<a>\s*)>>(?P<b>\s*)5[uU]?\b(?=\s*(?:[);,\]?:=<>!&|^}]|$))"
)
NEW_TOKENS = [
    (re.compile(r"&(\s*)(?:31|0x1[fF])[uU]?\b"), r"&\1(WARP_SIZE - 1)"),
    (_SHIFT5, r"\g<pre>\g<opd>\g<a>/\g<b>WARP_SIZE"),
    (re.compile(r"\bwarpSize\b"), "WARP_SIZE"),
    # CUB's hardware warp (hipCUB: HIPCUB_WARP_THREADS), the same number as the compat WARP_SIZE.
    (re.compile(r"\bCUB_(?:PTX_)?WARP_THREADS\b(?:\s*\([^()]*\))?"), "WARP_SIZE"),
]
_STATEMENT_END = (";", "{", "}")


def _sub(line: str, table) -> str:
    for pattern, repl in table:
        line = pattern.sub(repl, line)
    return line


def _finding_lines(ws: Workspace, rel: str, failure: Failure) -> list[int]:
    """1-based lines with warp-size findings in the file (the scanner's warp context), else the failure's."""
    from tools.scan import scan_file

    lines = {f.line for f in scan_file(ws.root / rel) if f.kind == "warp_size" and f.line}
    text = (ws.read(rel) or "").splitlines()
    # Logs go stale once the file changes: trust the line only while it still shows the literal.
    if (
        failure.line
        and failure.symbol
        and failure.line <= len(text)
        and failure.symbol.replace(" ", "") in text[failure.line - 1].replace(" ", "")
    ):
        lines.add(failure.line)
    return sorted(lines)


def _whole_statement(lines: list[str], i: int) -> bool:
    prev = lines[i - 1].rstrip() if i else ""
    starts = not prev or prev.endswith(_STATEMENT_END) or prev.lstrip().startswith(("#", "//"))
    return starts and lines[i].rstrip().endswith(_STATEMENT_END)


def _copy_runs(indices: list[int]) -> list[list[int]]:
    """Consecutive line indices grouped, so adjacent statements share one `#ifdef USE_ROCM` block."""
    runs: list[list[int]] = []
    for i in sorted(indices):
        if runs and runs[-1][-1] == i - 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    return runs


def rewrite(text: str, line_numbers: list[int]) -> tuple[str, list[str]]:
    """The text with warp-size literals on those lines derived from WARP_SIZE; and what was skipped."""
    lines = text.splitlines(keepends=True)
    where = line_platforms(lines)
    skipped, copies = [], {}
    for n in sorted(set(line_numbers)):
        i = n - 1
        if i >= len(lines) or where[i] in ("cuda", "dead"):
            continue
        line = _sub(lines[i], SAME_TOKENS)
        rocm = _sub(line, NEW_TOKENS)
        if rocm == lines[i]:
            skipped.append(f"line {n} (no safe rewrite of the literal in this expression)")
        elif rocm == line or where[i] == "rocm":
            lines[i] = rocm
        elif _whole_statement(lines, i):
            copies[i] = rocm if rocm.endswith("\n") else rocm + "\n"
        else:
            skipped.append(f"line {n} (not a whole statement)")
    for run in reversed(_copy_runs(list(copies))):
        cuda = [ln if ln.endswith("\n") else ln + "\n" for ln in lines[run[0] : run[-1] + 1]]
        rocm_lines = [copies[i] for i in run]
        lines[run[0] : run[-1] + 1] = ["#ifdef USE_ROCM\n", *rocm_lines, "#else\n", *cuda, "#endif\n"]
    return "".join(lines), skipped


class WarpSizeFixer:
    """Warp-size literals -> WARP_SIZE from the compat header (warpSize-generic kernels only)."""

    family = "warp_size"
    kinds: tuple[str, ...] = ("warp_size",)

    def propose(self, failure: Failure, ws: Workspace) -> Proposal | None:
        symbol = (failure.symbol or "").strip()
        rel = target_file(failure)
        text = ws.read(rel)
        if text is None:
            return None
        model, evidence = lane_model(text)
        if model == "32" or "WARP32_" in text:
            raise Decline(
                f"{rel} is written for 32-lane warps ({'; '.join(evidence) or 'WARP32_* shuffles'}) and "
                f"keeps 32-lane logical warps on ROCm, so its {symbol or '32'} is consistent; "
                f"deriving it from the 64-lane hardware warp would mix lane layouts"
                + (
                    "; CUB_WARP_THREADS is the hardware warp (hipCUB's HIPCUB_WARP_THREADS, 64 on "
                    "CDNA), so which width the kernel means needs a human to pick"
                    if "CUB_" in symbol
                    else ""
                )
            )
        new, skipped = rewrite(text, _finding_lines(ws, rel, failure))
        if new == text:
            if skipped:
                raise Decline(
                    f"{rel}: warp-size literal the rule cannot rewrite safely ({', '.join(skipped)})"
                )
            return None
        needed = {"WARP_SIZE"} | ({"WARP_FULL_MASK"} if "WARP_FULL_MASK" in new else set())
        compat, compat_edit = plan_compat(ws, rel, needed)
        edits: dict[str, tuple[str | None, str]] = {compat: compat_edit} if compat and compat_edit else {}
        if compat and not already_included(ws, rel, compat):
            new = add_include(new, include_spelling(compat, rel))
        edits[rel] = (text, new)
        return make_proposal(
            failure,
            self.family,
            edits,
            (
                f"{rel}: warp-size literals derived from WARP_SIZE in {compat} (64 on CDNA, 32 on CUDA and RDNA); "
                f"on CUDA the tokens are unchanged or kept in the #else branch. Only running the kernel on the GPU "
                f"proves the lane arithmetic; here it was compiled, not run."
            ),
            ws=ws,
        )


register(WarpSizeFixer())
