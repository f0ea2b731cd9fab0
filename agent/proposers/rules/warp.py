"""warp_intrinsic: CUDA warp intrinsics through the repo's one compat header (created once, reused).

Call sites change only the function name: `__shfl_xor_sync(m, v, 16)` -> `WARP32_SHFL_XOR(m, v, 16)`
in a kernel written for 32-lane warps (ROCm gets an explicit width 32), `WARP_SHFL_XOR(...)` when the
call passes its own width or the kernel is warpSize-generic. On CUDA each macro expands to exactly
the original call, so the CUDA preprocessor output is unchanged.
"""

from __future__ import annotations

import re

from agent.proposers.rules.base import Decline, Workspace, make_proposal, register
from agent.proposers.rules.compat_header import (
    NEW_HEADER,
    include_spelling,
    includes_transitively,
    insert_block,
    plan_compat,
)
from agent.proposers.rules.cpp import branches, include_of, line_platforms
from agent.proposers.rules.half_intrinsics import shuffle_block
from agent.proposers.rules.headers import target_file
from agent.proposers.rules.repo_helpers import learn_helpers, reuse_helpers
from tools.records import Failure, Proposal

# CUDA intrinsic -> (macro stem, arguments of the call without a width)
INTRINSICS = {
    "__shfl_sync": ("SHFL", 3),
    "__shfl_xor_sync": ("SHFL_XOR", 3),
    "__shfl_up_sync": ("SHFL_UP", 3),
    "__shfl_down_sync": ("SHFL_DOWN", 3),
    "__ballot_sync": ("BALLOT", 2),
    "__any_sync": ("ANY", 2),
    "__all_sync": ("ALL", 2),
    "__activemask": ("ACTIVEMASK", 0),
    "__syncwarp": ("SYNC", None),
    "__ldg": ("LDG", None),
}
# (__reduce_*_sync over a full mask: rule warp_reduce)
NO_HIP_EQUIVALENT = ("__match_any_sync", "__match_all_sync")
_CALL = re.compile(r"\b(" + "|".join(re.escape(n) for n in INTRINSICS) + r")\s*\(")
# CUB_WARP_THREADS is CUB's name for the hardware warp size: a kernel sized by it follows the hardware warp.
_GENERIC = re.compile(r"\b(warpSize|WARP_SIZE|(?:HIP)?CUB_(?:PTX_)?WARP_THREADS)\b")
_LANES32 = [
    (re.compile(r"for\s*\(\s*(?:int|unsigned)?\s*\w+\s*=\s*16\s*;"), "shuffle offsets start at 16"),
    (re.compile(r"%\s*32\b"), "`% 32` lane arithmetic"),
    (re.compile(r"&\s*(?:31|0x1[fF])\b"), "`& 31` lane masks"),
    (re.compile(r">>\s*5\b"), "`>> 5` warp indices"),
    (re.compile(r"/\s*32\b"), "`/ 32` warp indices"),
    (re.compile(r"\[\s*32\s*\]"), "`[32]` per-warp arrays"),
]


def lane_model(text: str) -> tuple[str, list[str]]:
    """How a kernel treats a warp: '32' (32-lane arithmetic, or no use of warpSize), 'generic'
    (warpSize, WARP_SIZE or CUB's warp size only) or 'mixed' (both: ambiguous); with the 32-lane
    evidence found.
    Only what the ROCm build compiles counts (CUDA-only branches are ignored)."""
    lines = text.splitlines()
    text = "\n".join(
        ln for ln, where in zip(lines, line_platforms(lines), strict=True) if where in ("both", "rocm")
    )
    found = [why for pattern, why in _LANES32 if pattern.search(text)]
    generic = bool(_GENERIC.search(text))
    if found and generic:
        return "mixed", found
    if generic:
        return "generic", []
    return "32", found or ["no use of warpSize: written for CUDA's 32-lane warp"]


def _arg_count(text: str, open_paren: int) -> int:
    """Top-level arguments of the call whose '(' is at `open_paren`."""
    depth, commas, empty = 0, 0, True
    for ch in text[open_paren:]:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                return 0 if empty else commas + 1
        elif depth == 1:
            if ch == ",":
                commas += 1
            elif not ch.isspace():
                empty = False
    return -1


def macro_for(name: str, nargs: int, lanes32: bool) -> str:
    stem, base = INTRINSICS[name]
    if stem == "LDG":
        return "COMPAT_LDG"
    if stem == "SYNC":
        return "WARP_SYNC"
    return f"WARP32_{stem}" if lanes32 and nargs == base else f"WARP_{stem}"


def rewrite_calls(text: str, lanes32: bool) -> tuple[str, list[str]]:
    """Rename every intrinsic call both toolchains compile; returns the text and the renames done."""
    lines = text.splitlines(keepends=True)
    out, done = [], []
    offset = 0
    for line, where in zip(lines, line_platforms(lines), strict=True):
        if where != "both":
            out.append(line)
            offset += len(line)
            continue
        pieces, last = [], 0
        for m in _CALL.finditer(line):
            nargs = _arg_count(text, offset + m.end() - 1)
            macro = macro_for(m.group(1), nargs, lanes32)
            pieces += [line[last : m.start(1)], macro]
            last = m.end(1)
            done.append(f"{m.group(1)} -> {macro}")
        out.append("".join(pieces) + line[last:])
        offset += len(line)
    return "".join(out), done


def _include_guard_depth(lines: list[str]) -> int:
    """1 when the file opens with an include guard (`#ifndef X` + `#define X`), else 0."""
    directives = [ln.strip() for ln in lines if ln.strip().startswith("#")]
    if len(directives) >= 2:
        head, define = directives[0].split(), directives[1].split()
        if head[:1] == ["#ifndef"] and define[:1] == ["#define"] and head[1:2] == define[1:2]:
            return 1
    return 0


def _branch_end(lines: list[str], stacks: list[tuple[str, ...]], i: int, depth: int) -> int:
    """Index of the line after the `#endif` that brings line i's nesting back to `depth`."""
    for j in range(i + 1, len(lines)):
        if len(stacks[j]) <= depth and lines[j].lstrip().startswith("#") and "endif" in lines[j]:
            return j + 1
    return i + 1


def add_include(text: str, spelling: str) -> str:
    """`#include "<spelling>"` with the file's other includes (see `add_lines`)."""
    return add_lines(text, [f'#include "{spelling}"\n'])


def add_lines(text: str, new: list[str]) -> str:
    """`new` after the file's last include at file level (inside its include guard), or after the
    `#endif` of the last ROCm/CUDA include block; never above the license or mid-code."""
    lines = text.splitlines(keepends=True)
    stacks = branches(lines)
    base = _include_guard_depth(lines)
    at = 0
    for i, ln in enumerate(lines):
        if not include_of(ln) or len(stacks[i]) < base:
            continue
        if len(stacks[i]) == base:
            at = max(at, i + 1)
        elif set(stacks[i][base:]) <= {"rocm", "cuda"}:  # an include in a platform block: after its #endif
            at = max(at, _branch_end(lines, stacks, i, base))
    if not at and _preamble_end(lines):  # no include yet: after the license and include guard, set apart
        at = _preamble_end(lines)
        new = (["\n"] if lines[at - 1].strip() else []) + new
        new += ["\n"] if at < len(lines) and lines[at].strip() else []
    if at and not lines[at - 1].endswith("\n"):
        lines[at - 1] += "\n"
    return "".join(lines[:at] + new + lines[at:])


def _preamble_end(lines: list[str]) -> int:
    """Index after the file's leading license comment and its include guard or `#pragma once` (0 when
    none); a comment that touches the code below it documents that code and stays with it."""
    at, i, in_block = 0, 0, False
    while i < len(lines):
        text = lines[i].strip()
        nxt = lines[i + 1].strip() if i + 1 < len(lines) else ""
        if in_block or text.startswith(("/*", "//")):
            in_block = ("*/" not in text[2:]) if text.startswith("/*") else in_block and "*/" not in text
            if not in_block and (not nxt or nxt.startswith("#")):
                at = i + 1
        elif re.match(r"#\s*pragma\s+once\b", text):
            return i + 1
        elif (guard := re.match(r"#\s*ifndef\s+(\w+)\s*$", text)) and re.match(
            rf"#\s*define\s+{guard.group(1)}\s*$", nxt
        ):
            return i + 2
        elif text:
            break
        i += 1
    return at


class WarpIntrinsicFixer:
    """Warp intrinsics -> the compat header's WARP_* / WARP32_* macros."""

    family = "warp"
    kinds: tuple[str, ...] = ("warp_intrinsic",)

    def propose(self, failure: Failure, ws: Workspace) -> Proposal | None:
        symbol = (failure.symbol or "").strip()
        if symbol in NO_HIP_EQUIVALENT:
            raise Decline(f"{symbol} has no HIP intrinsic; it needs a ballot/shuffle rewrite by hand")
        if symbol not in INTRINSICS:
            return None
        rel = target_file(failure)
        text = ws.read(rel)
        if text is None:
            return None
        model, evidence = lane_model(text)
        if model == "mixed" and _CALL.search(text):
            raise Decline(
                f"{rel} uses warpSize and also 32-lane arithmetic ({'; '.join(evidence)}): ambiguous "
                f"warp width; derive the literals from WARP_SIZE first (warp_size rule) or decide by hand"
            )
        # The repo's own helpers first (learned from its headers); rocport's macros for what they lack.
        new, reused, helper_headers = reuse_helpers(text, learn_helpers(ws), lanes32=model == "32")
        new, done = rewrite_calls(new, lanes32=model == "32")
        if not done and not reused:
            return None
        edits: dict[str, tuple[str | None, str]] = {}
        for header in sorted(helper_headers):
            if not includes_transitively(ws, rel, header):
                new = add_include(new, include_spelling(header, rel))
        compat = None
        if done:
            compat, compat_edit = plan_compat(ws, rel, {d.split(" -> ")[1] for d in done})
            bf16 = shuffle_block(ws, rel, text) if compat else None  # HIP's __shfl* lack bf16 overloads
            if bf16 and compat:  # (bf16 is only found where there is a compat header)
                old_compat = compat_edit[0] if compat_edit else ws.read(compat)
                base = compat_edit[1] if compat_edit else old_compat
                compat_edit = (old_compat, insert_block(base, bf16) if base else NEW_HEADER.format(body=bf16))
            edits.update({compat: compat_edit} if compat and compat_edit else {})
            if compat and not includes_transitively(ws, rel, compat):
                new = add_include(new, include_spelling(compat, rel))
        edits[rel] = (text, new)
        through = ", ".join(sorted(helper_headers) + ([compat] if compat else []))
        if reused:
            through += " (the repo's own helpers first)"
        done = reused + done
        width = (
            f"written for 32-lane warps ({'; '.join(evidence)}): 32-lane forms pass width 32 on ROCm"
            if model == "32"
            else "warpSize-generic: the hardware warp (64 lanes on CDNA) is kept"
        )
        return make_proposal(
            failure,
            self.family,
            edits,
            (
                f"{rel}: warp intrinsics through {through} ({', '.join(sorted(set(done)))}). The kernel is {width}; "
                f"ballots are 64-bit on ROCm. On CUDA every macro expands to the original call (a repo helper's "
                f"mask/width may be spelled differently with the same value). Warp-width "
                f"correctness is only proven by running the kernel on the GPU; here it was compiled, not run."
            ),
            ws=ws,
        )


register(WarpIntrinsicFixer())
