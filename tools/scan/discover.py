"""Which files a tree scan reads: scannable sources under the root, minus skipped, vendored and
excluded directories; symlinks never lead out of the tree."""

from __future__ import annotations

import fnmatch
import os
import re
from functools import lru_cache

from tools.scan.scanner import is_scannable

SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "__pycache__",
        "node_modules",
        ".tox",
        ".venv",
        "venv",
        ".eggs",
        "site-packages",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
    }
)
VENDORED_DIRS = frozenset({"third_party", "3rdparty", "third-party", "thirdparty", "vendor", "external"})


def excluded(rel: str, patterns: tuple[str, ...]) -> bool:
    """True when a glob names the file, a directory above it, or a directory of that name anywhere
    (`tests` leaves out tests/ and sgl-kernel/tests/ alike)."""
    return bool(patterns) and _exclusion(patterns).match(rel) is not None


@lru_cache(maxsize=32)
def _exclusion(patterns: tuple[str, ...]) -> re.Pattern[str]:
    forms = [form for p in patterns for form in (p, p.rstrip("/") + "/*", "*/" + p.rstrip("/") + "/*")]
    return re.compile("|".join(fnmatch.translate(form) for form in forms))


def discover(
    root: str | os.PathLike[str], *, include_vendored: bool = False, exclude: tuple[str, ...] = ()
) -> tuple[list[str], list[tuple[str, str]]]:
    """Scannable repo-relative paths under root (sorted, `exclude` globs left out), and unreadable
    directories with reasons. Symlinks are not followed out of the tree."""
    files: list[str] = []
    problems: list[tuple[str, str]] = []
    skip = SKIP_DIRS if include_vendored else SKIP_DIRS | VENDORED_DIRS
    root_real = os.path.realpath(root)
    # os.scandir's entries know their type from the directory listing: no lstat per file (a tree
    # of hundreds of files paid one syscall each in os.walk's islink and ours).
    todo = [(os.fspath(root), "")]
    while todo:
        directory, rel_dir = todo.pop()
        try:
            with os.scandir(directory) as listing:
                entries = list(listing)
        except OSError as exc:
            where = os.path.relpath(exc.filename, root) if exc.filename else "?"
            problems.append((where.replace(os.sep, "/"), f"unreadable directory: {exc.strerror or exc}"))
            continue
        for entry in entries:
            rel = rel_dir + entry.name
            if _is_dir(entry):  # a symlinked directory is not followed (as os.walk does)
                if entry.name not in skip and not entry.name.endswith(".egg-info") and not _is_link(entry):
                    todo.append((entry.path, rel + "/"))
                continue
            if not is_scannable(rel) or (exclude and excluded(rel, exclude)):
                continue
            if _is_link(entry) and not os.path.realpath(entry.path).startswith(root_real + os.sep):
                continue
            files.append(rel)
    files.sort()
    return files, problems


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def _is_link(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_symlink()
    except OSError:
        return False
