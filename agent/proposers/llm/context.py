"""The context pack an LLM gets for one failure: what broke, the code around it, and how the same
repo already handles ROCm elsewhere."""

from __future__ import annotations

import re
from pathlib import Path

from tools import git as gitops
from tools.records import Failure

# How a repo shows it already thinks about ROCm, in C++ and in Python.
ROCM_MARKERS = r"USE_ROCM|__HIP_PLATFORM_AMD__|__HIPCC__|is_hip\(\)|torch\.version\.hip|is_rocm\(\)"
SCOPE_MAX_LINES = 80


def enclosing_scope(text: str, line: int, max_lines: int = SCOPE_MAX_LINES) -> tuple[int, list[str]]:
    """The lines of the block enclosing `line` (1-based): from the nearest top-level opener above to
    its end, capped at max_lines around the line. Returns (first line number, lines)."""
    lines = text.splitlines()
    if not lines:
        return 1, []
    idx = min(max(line - 1, 0), len(lines) - 1)
    start = idx
    while start > 0 and not _opens_top_level(lines[start]):
        start -= 1
    end = idx
    while end + 1 < len(lines) and not _closes_top_level(lines[end]) and end - idx < max_lines // 2:
        end += 1
    if end - start + 1 > max_lines:
        start = max(start, idx - max_lines // 2)
        end = min(end, start + max_lines - 1)
    return start + 1, lines[start : end + 1]


def _opens_top_level(line: str) -> bool:
    if not line or line[0] in " \t}#/":
        return False
    return bool(
        re.match(
            r"(def |class |async def |template|__global__|__device__|static |inline |void |[\w:<>,\s*&]+\()",
            line,
        )
    )


def _closes_top_level(line: str) -> bool:
    return line.startswith("}")


def rocm_examples(repo: Path, exclude: str | None, limit: int = 4, context: int = 3) -> list[str]:
    """Snippets from other files of the repo that already guard ROCm, as the house style to follow."""
    try:
        out = gitops.run(repo, "grep", "-n", "-E", ROCM_MARKERS, ok=(0, 1), timeout=30).stdout
    except (OSError, gitops.GitError):
        return []
    snippets, seen_files = [], set()
    for hit in out.splitlines():
        path, _, rest = hit.partition(":")
        num = rest.partition(":")[0]
        if path == exclude or path in seen_files or not num.isdigit():
            continue
        seen_files.add(path)
        lines = (repo / path).read_text(errors="replace").splitlines()
        n = int(num) - 1
        body = "\n".join(lines[max(0, n - context) : n + context + 4])
        snippets.append(f"--- {path}:{n + 1}\n{body}")
        if len(snippets) >= limit:
            break
    return snippets


def context_pack(failure: Failure, repo: Path) -> str:
    """The user message for the model: the failure, its code with enclosing scope, house ROCm style."""
    parts = [f"## Failure\nkind: {failure.kind}\nmessage: {failure.message}"]
    if failure.file:
        where = f"{failure.file}:{failure.line}" if failure.line else failure.file
        parts.append(f"where: {where}")
    if failure.symbol:
        parts.append(f"symbol: {failure.symbol}")
    if failure.excerpt:
        parts.append(f"\n## Log excerpt\n```\n{failure.excerpt.strip()}\n```")
    path = repo / failure.file if failure.file else None
    if path and path.is_file():
        first, lines = enclosing_scope(path.read_text(errors="replace"), failure.line or 1)
        numbered = "\n".join(f"{first + i:5d} | {ln}" for i, ln in enumerate(lines))
        parts.append(f"\n## Code ({failure.file}, enclosing scope)\n```\n{numbered}\n```")
    examples = rocm_examples(repo, failure.file)
    if examples:
        parts.append(
            "\n## How this repo already handles ROCm elsewhere\n```\n" + "\n\n".join(examples) + "\n```"
        )
    return "\n".join(parts)
