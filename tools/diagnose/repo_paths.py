"""Map a path printed in a log to the repository file it names.

Logs name files through whatever tree produced them: the repo mounted elsewhere in a container,
an installed copy in site-packages (`sglang/srt/x.py` for `python/sglang/srt/x.py`), a build tree
or a hipify output dir (`build/hipify/x.h` for `src/x.h`), a hipified copy (`hip/x.hip` for
`cuda/x.cu`, `x_hip.cuh` for `x.cuh`, `HIPGraphs.h` for `CUDAGraphs.h`), a Windows path, or a
path with `./` and `../` segments. `repo_file` tries each reading, most literal first.
"""

from __future__ import annotations

import os
import posixpath
import re
from functools import lru_cache
from pathlib import Path, PurePosixPath

MAX_INDEXED_FILES = 300_000
_SKIP_DIRS = {".git", ".hg", "node_modules", "__pycache__", ".venv", ".tox"}
_LIBRARY = re.compile(r"(?:site|dist)-packages/|^/(?:opt/rocm|usr/|opt/conda/include|usr/local/cuda)")


def normalize(path: str) -> str:
    """Forward slashes, `.`/`..` segments resolved, leading `./` and `../` (a build dir) dropped."""
    path = path.replace("\\", "/")
    if "/." in path or path.startswith("."):
        absolute = path.startswith("/")
        path = posixpath.normpath(path)
        if not absolute:
            while path.startswith("../"):
                path = path[3:]
    return path


@lru_cache(maxsize=8)
def _index(root: str) -> dict[str, tuple[str, ...]]:
    """Repo files by basename (bounded; a huge tree is indexed up to MAX_INDEXED_FILES files)."""
    by_name: dict[str, list[str]] = {}
    count = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in _SKIP_DIRS]
        rel_dir = os.path.relpath(dirpath, root)
        for name in filenames:
            rel = name if rel_dir == "." else f"{rel_dir}/{name}".replace(os.sep, "/")
            by_name.setdefault(name, []).append(rel)
            count += 1
            if count >= MAX_INDEXED_FILES:
                return {k: tuple(v) for k, v in by_name.items()}
    return {k: tuple(v) for k, v in by_name.items()}


@lru_cache(maxsize=4096)
def exists_under(root: str, rel: str) -> bool:
    return (Path(root) / rel).is_file()


def _direct(path: str, root: str) -> str | None:
    """The repo path when `path` is under `root`, relative and present, or ends with a repo path."""
    if path.startswith(root.rstrip("/") + "/"):
        return path[len(root.rstrip("/")) + 1 :]
    if not path.startswith("/") and exists_under(root, path):
        return path
    parts = PurePosixPath(path if path.startswith("/") else "/" + path).parts
    for start in range(1, max(1, len(parts) - 1)):  # the longest tail of 2+ components that exists
        rel = "/".join(parts[start:])
        if exists_under(root, rel):
            return rel
    return None


def _unique_tail(path: str, root: str, min_parts: int) -> str | None:
    """The one repo file sharing the longest tail (of `min_parts`+ components) with `path`."""
    parts = PurePosixPath(path).parts
    candidates = _index(root).get(parts[-1], ()) if parts else ()
    best, best_len, tie = None, 0, False
    for rel in candidates:
        rel_parts = PurePosixPath(rel).parts
        n = 0
        while n < min(len(parts), len(rel_parts)) and parts[-1 - n] == rel_parts[-1 - n]:
            n += 1
        if n > best_len:
            best, best_len, tie = rel, n, False
        elif n == best_len:
            tie = True
    return best if best is not None and best_len >= min_parts and not tie else None


def _swap_hip(word: str) -> str:
    return word.replace("HIP", "CUDA").replace("Hip", "Cuda").replace("hip", "cuda")


def hipify_sources(path: str) -> list[str]:
    """Paths hipify may have made `path` from (x.hip <- x.cu, hip/ <- cuda/, x_hip.h <- x.h, ...)."""
    if "hip" not in path.lower():
        return []
    directory, base = posixpath.split(path)
    stem, ext = posixpath.splitext(base)
    exts = [".cu", ".cpp", ".hip"] if ext == ".hip" else [ext]
    stems = dict.fromkeys([stem, re.sub(r"_hip$", "", stem), _swap_hip(stem)])
    parts = directory.split("/") if directory else []
    dirs = dict.fromkeys(
        [
            "/".join(parts),
            "/".join(_swap_hip(p) if "hip" in p.lower() else p for p in parts),
            "/".join(p for p in parts if p.lower() != "hip"),
        ]
    )
    found = [posixpath.join(d, s + e) for d in dirs for s in stems for e in exts]
    return [p for p in dict.fromkeys(found) if p != path]


def repo_file(path: str, root: str) -> str | None:
    """The repo-relative file `path` names, or None when it is not the repo's."""
    readings = [path, *hipify_sources(path)]
    for reading in readings:
        rel = _direct(reading, root)
        if rel:
            return rel
    # installed packages and build trees: a unique tail match (a library path needs its package dir too)
    min_parts = 2 if _LIBRARY.search(path) else 1
    if _LIBRARY.search(path) and not re.search(r"(?:site|dist)-packages/", path):
        return None  # a toolchain header (/opt/rocm, /usr) is never the repo's, whatever its name
    for reading in readings:
        rel = _unique_tail(reading, root, min_parts)
        if rel:
            return rel
    return None


def is_library_path(path: str) -> bool:
    """Toolchain, system and installed-package paths."""
    return bool(_LIBRARY.search(path)) or "/site-packages/torch/include/" in path
