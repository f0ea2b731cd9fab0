"""Paths made repo-relative and signatures that are stable across machines and runs.

A signature must cluster the same failure seen in two sweeps: the same kind, the same
repo-relative file and the same symbol (or message with every run-specific detail removed:
line numbers, addresses, temp dirs, timestamps, pids, absolute prefixes).
"""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path, PurePosixPath

# Build trees that mirror the source tree: setuptools temp dirs, pip's unpack dir, CMake/ninja.
_BUILD_PREFIXES = [
    re.compile(r"^.*?/build/temp\.[^/]+/"),
    re.compile(r"^.*?/build/lib\.[^/]+/"),
    re.compile(r"^/tmp/pip-(?:req-build|install|build-env)-[^/]+/(?:normal/|overlay/)?"),
    re.compile(r"^.*?/(?:site|dist)-packages/"),
]
_TEMP_DIR = re.compile(r"/(?:tmp|var/tmp|private/var/folders/[^/]+/[^/]+/T)/[^/\s'\"]+")
_ROCM_VERSIONED = re.compile(r"/opt/rocm-[\d.]+")
_HEX = re.compile(r"0x[0-9a-fA-F]+")
_ABS_PATH = re.compile(r"(?<![\w.])/(?:[\w.+-]+/)+([\w.+-]+)")
_NUMBER = re.compile(r"\d+")
_SPACES = re.compile(r"\s+")


@lru_cache(maxsize=4096)
def _exists_under(root: str, rel: str) -> bool:
    return (Path(root) / rel).is_file()


def _suffix_in_repo(path: str, root: str) -> str | None:
    """The longest tail of `path` (2+ components) that names a file in the repo.

    Covers a repo mounted elsewhere in a container (/sgl-workspace/sglang/python/...), an
    installed copy in site-packages, and build trees that copy sources.
    """
    parts = PurePosixPath(path).parts
    for start in range(1, max(1, len(parts) - 1)):
        rel = "/".join(parts[start:])
        if _exists_under(root, rel):
            return rel
    return None


def relativize(path: str | None, repo_root: str | Path | None = None) -> str | None:
    """A repo-relative path when the file belongs to the repo, else a machine-neutral form."""
    if not path:
        return path
    path = path.replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    if repo_root is not None:
        root = str(Path(repo_root).resolve())
        for prefix in (root, str(repo_root)):
            if path.startswith(prefix.rstrip("/") + "/"):
                return path[len(prefix.rstrip("/")) + 1:]
        if not path.startswith("/") and _exists_under(root, path):
            return path
        tail = _suffix_in_repo(path if path.startswith("/") else "/" + path, root)
        if tail:
            return tail
        stripped = _strip_build_prefix(path)
        return _unhipified(stripped, root) or stripped
    return _strip_build_prefix(path)


# Build-time hipify writes renamed copies (x.cu -> x.hip, x.cuh -> x_hip.cuh, cuda/ -> hip/);
# a fix belongs in the source the copy was made from.
_HIPIFIED = [(re.compile(r"\.hip$"), ".cu"), (re.compile(r"_hip(\.\w+)$"), r"\1"),
             (re.compile(r"(^|/)hip/"), r"\1cuda/")]


def _unhipified(path: str, root: str) -> str | None:
    """The repo source a hipified build copy was generated from, when it exists."""
    if path.startswith("/"):
        return None
    candidate = path
    for pattern, repl in _HIPIFIED:
        candidate = pattern.sub(repl, candidate)
    if candidate != path and _exists_under(root, candidate):
        return candidate
    return None


def _strip_build_prefix(path: str) -> str:
    for pattern in _BUILD_PREFIXES:
        stripped = pattern.sub("", path, count=1)
        if stripped != path:
            return stripped
    return _ROCM_VERSIONED.sub("/opt/rocm", path)


def is_system_path(path: str | None, repo_root: str | Path | None = None) -> bool:
    """True for toolchain/system headers: absolute paths outside the repo (ROCm, CUDA, libc++)."""
    if not path or not path.startswith("/"):
        return False
    if repo_root is not None:
        root = str(Path(repo_root).resolve())
        return not (path.startswith(root + "/") or _suffix_in_repo(path, root))
    return bool(re.match(r"^/(?:opt/rocm|usr/|opt/conda/include|usr/local/cuda)", path)) or \
        "/site-packages/torch/include/" in path


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
    what = symbol if symbol else normalize_message(message)
    return f"{kind}:{where}:{what}"
