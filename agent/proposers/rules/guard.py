"""Wrap unguarded CUDA #include runs in an `#ifdef USE_ROCM` branch, merging with adjacent guards.

The CUDA lines move verbatim into the CUDA branch (so the CUDA preprocessor output is unchanged);
the ROCm branch gets the replacement lines. A run next to an existing USE_ROCM include guard is
merged into it rather than getting a second guard.
"""

from __future__ import annotations

import re

from agent.proposers.rules.cpp import GuardBlock, branches, guard_blocks, include_of, line_platforms


def _ensure_nl(line: str) -> str:
    return line if line.endswith("\n") else line + "\n"


def _between(line: str) -> bool:
    """A line a guard may span between two CUDA includes: blank, a comment, or another top-level include
    (the ROCm branch gets a copy of such includes, so one block of includes gets one guard)."""
    text = line.strip()
    return not text or text.startswith(("//", "/*", "*")) or include_of(line) is not None


def _runs(lines: list[str], targets: set[int], stacks: list[tuple[str, ...]]) -> list[tuple[int, int]]:
    """Maximal [start, end] spans of target lines, spanning blank, comment and other include lines."""
    runs: list[tuple[int, int]] = []
    for i in sorted(targets):
        if runs:
            s, e = runs[-1]
            if all(_between(lines[j]) and not stacks[j] for j in range(e + 1, i)):
                runs[-1] = (s, i)
                continue
        runs.append((i, i))
    return runs


_INCLUDE_KIND = re.compile(
    r"\s*(?:$|#\s*(?:include|define|pragma)\b|//|/\*|\*|namespace\s+\w+\s*=|typedef\b|using\b)"
)


def _include_block(lines: list[str], block: GuardBlock) -> bool:
    """True for a guard that only selects headers (includes, aliases, typedefs), not code."""
    inner = [
        ln for i, ln in enumerate(lines[block.start + 1 : block.end], block.start + 1) if i != block.middle
    ]
    return all(_INCLUDE_KIND.match(ln) for ln in inner)


def _adjacent(
    lines: list[str], blocks: list[GuardBlock], start: int, end: int
) -> tuple[GuardBlock, str] | None:
    """An existing include guard block right before or right after the run (blank lines between allowed)."""
    for block in blocks:
        if not _include_block(lines, block):
            continue
        if block.end < start and all(not lines[j].strip() for j in range(block.end + 1, start)):
            return block, "after"
        if block.start > end and all(not lines[j].strip() for j in range(end + 1, block.start)):
            return block, "before"
    return None


def _branch_text(block: GuardBlock, lines: list[str]) -> tuple[list[str], list[str]]:
    first = lines[block.start + 1 : block.middle if block.middle is not None else block.end]
    second = lines[block.middle + 1 : block.end] if block.middle is not None else []
    return (first, second) if block.rocm_first else (second, first)


def _merged(
    block: GuardBlock, lines: list[str], rocm_new: list[str], cuda_new: list[str], where: str
) -> list[str]:
    """The block rewritten with new ROCm and CUDA lines added on the side where the run was."""
    rocm, cuda = _branch_text(block, lines)
    rocm = (
        [ln for ln in rocm_new if ln not in rocm] + rocm
        if where == "before"
        else rocm + [ln for ln in rocm_new if ln not in rocm]
    )
    cuda = cuda_new + cuda if where == "before" else cuda + cuda_new
    head = lines[block.start]
    else_line = lines[block.middle] if block.middle is not None else "#else\n"
    first, second = (rocm, cuda) if block.rocm_first else (cuda, rocm)
    return [head, *first, else_line, *second, lines[block.end]]


def guard_includes(text: str, replacements: dict[str, list[str]]) -> str:
    """Guard every unguarded include of a header in `replacements` (header -> ROCm lines)."""
    lines = [_ensure_nl(ln) for ln in text.splitlines(keepends=True)]
    stacks = branches(lines)
    platforms = line_platforms(lines)
    targets = {i for i, ln in enumerate(lines) if include_of(ln) in replacements and platforms[i] == "both"}
    for start, end in reversed(_runs(lines, targets, stacks)):
        run = lines[start : end + 1]
        rocm_new: list[str] = []
        for ln in run:
            header = include_of(ln)
            for rep in replacements.get(header or "", [ln] if header else []):
                if _ensure_nl(rep) not in rocm_new:
                    rocm_new.append(_ensure_nl(rep))
        found = _adjacent(lines, guard_blocks(lines), start, end)
        if found is None:
            lines[start : end + 1] = ["#ifdef USE_ROCM\n", *rocm_new, "#else\n", *run, "#endif\n"]
            continue
        block, where = found
        new_block = _merged(block, lines, rocm_new, run, where)
        if where == "after":
            lines[block.start : end + 1] = new_block + lines[block.end + 1 : start]
        else:
            lines[start : block.end + 1] = lines[end + 1 : block.start] + new_block
    out = "".join(lines)
    if not text.endswith("\n") and out.endswith("\n"):
        out = out[:-1]  # keep the file's missing final newline as it was
    return out
