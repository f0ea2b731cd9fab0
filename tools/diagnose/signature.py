"""Paths made repo-relative and signatures that are stable across machines and runs.

A signature must cluster the same failure seen in two sweeps: the same kind, the same
repo-relative file and the same symbol (or message with every run-specific detail removed:
line numbers, addresses, temp dirs, timestamps, pids, absolute prefixes).
"""

from __future__ import annotations

import re
from pathlib import Path

from tools.diagnose.repo_paths import is_library_path, normalize, repo_file

# Build trees that mirror the source tree: setuptools temp dirs, pip's unpack dir, CMake/ninja.
_BUILD_PREFIXES = [
    re.compile(r"^.*?/build/temp\.[^/]+/"),
    re.compile(r"^.*?/build/lib\.[^/]+/"),
    re.compile(r"^/tmp/pip-(?:req-build|install|build-env)-[^/]+/(?:normal/|overlay/)?"),
    re.compile(r"^.*?/(?:site|dist)-packages/"),
]
_TEMP_DIR = re.compile(r"/(?:tmp|var/tmp|private/var/folders/[^/]+/[^/]+/T)/[^/\s'\"]+")
_ROCM_VERSIONED = re.compile(r"/opt/rocm-\d+(?:\.\d+)*")
_HEX = re.compile(r"0x[0-9a-fA-F]+")
_ABS_PATH = re.compile(r"(?<![\w.])/(?:[\w.+-]+/)+([\w.+-]+)")
_NUMBER = re.compile(r"\d+")
_SPACES = re.compile(r"\s+")


def relativize(path: str | None, repo_root: str | Path | None = None) -> str | None:
    """A repo-relative path when the file belongs to the repo, else a machine-neutral form."""
    if not path:
        return path
    path = normalize(path)
    if repo_root is not None:
        for root in dict.fromkeys([str(Path(repo_root).resolve()), str(repo_root).rstrip("/")]):
            rel = repo_file(path, root)
            if rel:
                return rel
    return _strip_build_prefix(path)


def _strip_build_prefix(path: str) -> str:
    for pattern in _BUILD_PREFIXES:
        stripped = pattern.sub("", path, count=1)
        if stripped != path:
            return stripped
    return _ROCM_VERSIONED.sub("/opt/rocm", path)


def is_system_path(path: str | None, repo_root: str | Path | None = None) -> bool:
    """True for toolchain/system headers: absolute paths outside the repo (ROCm, CUDA, libc++)."""
    if not path:
        return False
    path = normalize(path)
    if not path.startswith("/"):
        return False
    if repo_root is not None:
        roots = dict.fromkeys([str(Path(repo_root).resolve()), str(repo_root).rstrip("/")])
        return not any(repo_file(path, root) for root in roots)
    return is_library_path(path)


def rocm_version(text: str) -> str | None:
    """The ROCm release an `/opt/rocm-X.Y.Z` path names (often the diagnosis itself)."""
    m = _ROCM_VERSIONED.search(text)
    return m.group(0).split("-", 1)[1] if m else None


def normalize_message(message: str) -> str:
    """A message with run-specific detail removed, for clustering."""
    text = _TEMP_DIR.sub("<tmp>", message)
    text = _HEX.sub("0x?", text)
    text = _ABS_PATH.sub(lambda m: m.group(1), text)
    text = _NUMBER.sub("N", text)
    return _SPACES.sub(" ", text).strip()[:200]


def make_signature(kind: str, file: str | None, symbol: str | None, message: str) -> str:
    """`kind:file:symbol-or-normalised-message`, the same on every machine and run."""
    where = _strip_build_prefix(_TEMP_DIR.sub("<tmp>", file)) if file else "-"
    what = symbol or normalize_message(message)
    return f"{kind}:{where}:{what}"
