"""Which style configuration of a repo governs one of its files (the nearest one up to the repo root)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

STYLE_FILES = (".clang-format", "_clang-format")


def nearest_folder(root: Path, rel: str, found: Callable[[Path], bool]) -> Path | None:
    """The first folder from `rel`'s up to the repo root for which `found(folder)` is true."""
    folder = (root / rel).parent
    while True:
        if found(folder):
            return folder
        if folder == root or root not in folder.parents:
            return None
        folder = folder.parent


def has_style(root: Path, rel: str) -> bool:
    """True when a .clang-format governs `rel` (in its folder or any parent inside the repo)."""
    return nearest_folder(root, rel, lambda d: any((d / name).is_file() for name in STYLE_FILES)) is not None
