"""Patches in the repo's own style: the lines a fix adds are run through the repo's clang-format.

Only changed lines (and the unchanged lines a new guard wraps) are formatted, with `clang-format --lines`,
so the rest of the file stays byte for byte as it was. Without a .clang-format in the repo, or without
clang-format on the machine, the text is returned unchanged.
"""
from __future__ import annotations

import difflib
import shutil
import subprocess
from pathlib import Path

C_EXTS = (".cu", ".cuh", ".h", ".hpp", ".hh", ".cpp", ".cc", ".cxx", ".inl", ".c")
STYLE_FILES = (".clang-format", "_clang-format")
# Unchanged lines this close to a change are formatted with it: the CUDA lines a new guard wraps
# get the guard's indentation when the style indents preprocessor directives.
_BRIDGE = 3


def has_style(root: Path, rel: str) -> bool:
    """True when a .clang-format governs `rel` (in its folder or any parent inside the repo)."""
    folder = (root / rel).parent
    while True:
        if any((folder / name).is_file() for name in STYLE_FILES):
            return True
        if folder == root or root not in folder.parents:
            return False
        folder = folder.parent


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
