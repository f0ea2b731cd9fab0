"""Per-file questions the rules and the scanner ask: which build compiles each line, and is the whole
file ROCm-only."""

from __future__ import annotations

import posixpath

from tools.cpp.build_configs import cuda_config, rocm_config
from tools.cpp.headers import is_rocm_header
from tools.cpp.preprocessor import Regions, Seed, walk
from tools.cpp.source import mask_comments_and_strings

ROCM_ONLY_DIRS = ("rocm", "hip", "amd")
"""A directory with one of these names holds ROCm-only sources (vLLM's csrc/rocm/)."""


def analyze(text: str, *, hipify: bool = False, seed: Seed | None = None) -> Regions:
    """The preprocessor view of one file's text under the ROCm and the CUDA build."""
    return walk(mask_comments_and_strings(text), text, rocm_config(hipify), cuda_config(), seed)


def platform(rocm: bool | None, cuda: bool | None) -> str:
    """'both', 'rocm', 'cuda' or 'dead' for a (ROCm, CUDA) liveness pair (unknown counts as live)."""
    if rocm is False:
        return "dead" if cuda is False else "cuda"
    return "rocm" if cuda is False else "both"


def line_platforms(text: str, *, hipify: bool = False, seed: Seed | None = None) -> list[str]:
    """For each line (index 0 = line 1): which builds compile it, 'both', 'rocm', 'cuda' or 'dead'.
    A directive line belongs to the branch it closes or the one around it, never the one it opens."""
    regions = analyze(text, hipify=hipify, seed=seed)
    out, offset = [], 0
    for line in text.split("\n"):
        out.append(platform(*regions.at(offset)))
        offset += len(line) + 1
    if text.endswith("\n"):
        out.pop()
    return out


def rocm_only_file(rel: str, regions: Regions) -> bool:
    """True for a file only the ROCm build compiles: a `.hip` source, a file under a rocm/ (hip/,
    amd/) directory, one that includes a hip/, hipcub/, rocprim/... header where the CUDA build
    compiles too (so the CUDA build could not compile it)."""
    if rel.endswith(".hip") or any(part in ROCM_ONLY_DIRS for part in posixpath.dirname(rel).split("/")):
        return True
    return any(
        inc.cuda is not False and inc.rocm is not False and is_rocm_header(inc.header)
        for inc in regions.includes
    )
