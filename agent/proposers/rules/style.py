"""Patches in the repo's own style: the lines a fix adds go through the repo's clang-format (C/C++) or
its ruff/black config (Python).

Only changed lines (and the unchanged lines a new guard wraps) are formatted, with `clang-format --lines`,
so the rest of the file stays byte for byte as it was. Without a .clang-format in the repo, or without
clang-format on the machine, the text is returned unchanged.
"""

from __future__ import annotations

import difflib
import shutil
import subprocess
import sys
from pathlib import Path

from tools.repo_style import has_style, nearest_folder

C_EXTS = (".cu", ".cuh", ".h", ".hpp", ".hh", ".cpp", ".cc", ".cxx", ".inl", ".c")
# Unchanged lines this close to a change are formatted with it: the CUDA lines a new guard wraps
# get the guard's indentation when the style indents preprocessor directives.
_BRIDGE = 3


def _pyproject_has(folder: Path, table: str) -> bool:
    path = folder / "pyproject.toml"
    return path.is_file() and f"[tool.{table}" in path.read_text(encoding="utf-8", errors="replace")


def python_formatter(root: Path, rel: str) -> list[str] | None:
    """The repo's Python formatter as a command reading stdin: ruff when a ruff config governs `rel`
    (ruff.toml, .ruff.toml, [tool.ruff] in pyproject.toml), else black with a [tool.black] table."""
    ruff_cfg = nearest_folder(
        root,
        rel,
        lambda d: (d / "ruff.toml").is_file() or (d / ".ruff.toml").is_file() or _pyproject_has(d, "ruff"),
    )
    ruff = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    if ruff_cfg is not None and Path(ruff).is_file():
        return [ruff, "format", "--quiet", f"--stdin-filename={root / rel}", "-"]
    black = shutil.which("black")
    if black and nearest_folder(root, rel, lambda d: _pyproject_has(d, "black")) is not None:
        return [black, "--quiet", f"--stdin-filename={root / rel}", "-"]
    return None


def python_format(root: Path, rel: str, old: str | None, new: str) -> str:
    """`new` with its changed lines formatted by the repo's ruff/black config (unchanged without one)."""
    cmd = python_formatter(root, rel) if rel.endswith(".py") else None
    spans = changed_ranges(old or "", new) if old is not None else [(1, max(1, len(new.splitlines())))]
    if cmd is None or not spans:
        return new
    for a, b in reversed(spans):  # bottom first: a reformatted span never shifts the ones above it
        flag = f"--range={a}-{b}" if "format" in cmd else f"--line-ranges={a}-{b}"
        proc = subprocess.run(
            [*cmd[:-1], flag, "-"], input=new, capture_output=True, text=True, timeout=60, check=False
        )
        if proc.returncode != 0 or not proc.stdout:
            return new  # a syntax error is the import check's to report, not the formatter's
        new = proc.stdout
    return new


def restyle(root: Path, rel: str, old: str | None, new: str) -> str:
    """`new` with its changed lines in the repo's style: clang-format for C/C++, ruff/black for Python."""
    return python_format(root, rel, old, new) if rel.endswith(".py") else clang_format(root, rel, old, new)


def changed_ranges(old: str, new: str) -> list[tuple[int, int]]:
    """1-based [first, last] line ranges of `new` that differ from `old`, bridged over short gaps."""
    spans: list[tuple[int, int]] = []
    matcher = difflib.SequenceMatcher(None, old.splitlines(), new.splitlines(), autojunk=False)
    for tag, _, _, j1, j2 in matcher.get_opcodes():
        if tag in ("replace", "insert") and j2 > j1:
            if spans and j1 + 1 - spans[-1][1] <= _BRIDGE + 1:
                spans[-1] = (spans[-1][0], j2)
            else:
                spans.append((j1 + 1, j2))
    return spans


def clang_format(root: Path, rel: str, old: str | None, new: str) -> str:
    """`new` with its changed lines formatted by the repo's clang-format (unchanged when no style applies)."""
    if not rel.endswith(C_EXTS) or shutil.which("clang-format") is None or not has_style(root, rel):
        return new
    spans = changed_ranges(old or "", new) if old is not None else [(1, max(1, len(new.splitlines())))]
    if not spans:
        return new
    # Never reorder includes: the CUDA branch must keep its order (the CUDA preprocessor output is proven equal).
    cmd = ["clang-format", "--style=file", "--sort-includes=false", f"--assume-filename={root / rel}"]
    cmd += [f"--lines={a}:{b}" for a, b in spans]
    proc = subprocess.run(cmd, input=new, capture_output=True, text=True, timeout=60, check=False)
    return proc.stdout if proc.returncode == 0 and proc.stdout else new
