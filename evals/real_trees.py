"""The real framework trees the scan is measured on, downloaded at run time (never committed).

vLLM: the pinned sdist from PyPI (it carries csrc/ and CMakeLists.txt). sglang: sgl-kernel has no sdist
on PyPI, so the pinned commit's source archive comes from GitHub; only sgl-kernel/ and python/ are
unpacked, checked against a digest of their files.
"""

from __future__ import annotations

import hashlib
import json
import tarfile
import urllib.parse
import urllib.request
from pathlib import Path

VLLM_VERSION = "0.34.0"
VLLM_SHA256 = "fcad848b246a9d8652b47e6425af92334dc02492f9802720f54e27b823cf0113"
PYPI_JSON = "https://pypi.org/pypi/{name}/json"
SGLANG_COMMIT = "7b9156c773f0467df80cc849637d94a4522a8b5e"
SGLANG_ARCHIVE = "https://codeload.github.com/sgl-project/sglang/tar.gz/{commit}"
SGLANG_PYTHON_DIGEST = "6df9aab740c6dcd1af406000e43c5715f528203e97abbbdd2db1bf115ceb6113"
"""tree_digest() of python/ at SGLANG_COMMIT."""
SGL_KERNEL_DIGEST = "d94e695e2e9c0a474fd26077c65ab78295265a12b133ce575a73d081ccaf4b2b"
"""tree_digest() of sgl-kernel/ at SGLANG_COMMIT."""


def fetch_vllm(cache: Path) -> Path:
    """The pinned vLLM sdist, unpacked under `cache` (downloaded once, checked against its sha256).
    The URL comes from PyPI's JSON API: `pip download --no-binary` would build vLLM's metadata,
    which needs torch and CUDA."""
    tree = cache / f"vllm-{VLLM_VERSION}"
    if (tree / "csrc").is_dir():
        return tree
    cache.mkdir(parents=True, exist_ok=True)
    archive = cache / f"vllm-{VLLM_VERSION}.tar.gz"
    if not archive.is_file():
        index_url = PYPI_JSON.format(name="vllm")
        with urllib.request.urlopen(index_url, timeout=60) as resp:  # noqa: S310 (fixed https PyPI URL)
            index = json.load(resp)
        sdists = [
            u for u in index["releases"].get(VLLM_VERSION, index["urls"]) if u["packagetype"] == "sdist"
        ]
        if not sdists:
            raise SystemExit(f"real_trees: PyPI lists no sdist for vllm {VLLM_VERSION}")
        urllib.request.urlretrieve(urllib.parse.urljoin(index_url, sdists[0]["url"]), archive)  # noqa: S310 (PyPI's)
    if hashlib.sha256(archive.read_bytes()).hexdigest() != VLLM_SHA256:
        archive.unlink()
        raise SystemExit(f"real_trees: vllm-{VLLM_VERSION}.tar.gz does not match its pinned sha256")
    with tarfile.open(archive) as tar:
        tar.extractall(cache, filter="data")
    return tree


def tree_digest(root: Path) -> str:
    """sha256 over every file's relative path and sha256, in path order: archives of the same
    commit differ in bytes (compression, timestamps) but not in this."""
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(
            f"{path.relative_to(root).as_posix()}\0{hashlib.sha256(path.read_bytes()).hexdigest()}\n".encode()
        )
    return digest.hexdigest()


def fetch_sglang(cache: Path, url: str | None = None) -> Path:
    """sglang's sgl-kernel/ and python/ at the pinned commit, unpacked under `cache` (the rest of
    the 1 GB repository is never unpacked) and checked against their digests."""
    tree = cache / f"sglang-{SGLANG_COMMIT[:7]}"
    if not (tree / "sgl-kernel" / "setup_rocm.py").is_file() or not (tree / "python").is_dir():
        archive = cache / f"sglang-{SGLANG_COMMIT[:7]}.tar.gz"
        if not archive.is_file():
            cache.mkdir(parents=True, exist_ok=True)
            # a pinned https archive URL (ours, or the one the caller passes for a mirror)
            urllib.request.urlretrieve(url or SGLANG_ARCHIVE.format(commit=SGLANG_COMMIT), archive)  # noqa: S310
        with tarfile.open(archive) as tar:
            members = []
            for member in tar.getmembers():
                _, _, rest = member.name.partition("/")
                if rest.startswith(("sgl-kernel/", "python/")):
                    member.name = rest
                    members.append(member)
            tar.extractall(tree, members=members, filter="data")
    if tree_digest(tree / "sgl-kernel") != SGL_KERNEL_DIGEST:
        raise SystemExit(
            f"real_trees: {tree}/sgl-kernel does not match sglang {SGLANG_COMMIT[:7]}; remove it"
        )
    return tree
