"""The ROCm build's own view of a tree: which files it compiles, and what the rest would need.

A profile's `rocm_sources` names the build's source list (tools/scan/build_lists.py). Files the
ROCm build compiles are its translation units plus the repo headers they include where ROCm
compiles the include. Findings there are real blockers; findings elsewhere are summarised per file
("not in the ROCm build": what adding it to the build would take).
"""

from __future__ import annotations

import os
import posixpath
from collections import Counter

from tools.records import Failure
from tools.scan.build_lists import cmake_source_lists, cmake_sources, setup_py_sources

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (tools/__init__.py)
if TYPE_CHECKING:
    from tools.rocm_sources import RocmSources

DEFAULT_PROFILE_EXCLUDES = ("tests", "test", "benchmarks", "docs", "examples")
"""Directories a framework profile leaves out unless asked: no ROCm build compiles them."""


class BuildList:
    """The ROCm translation units, relative to the scanned directory (a plain class, as the scan's
    other records: tools/scan/scanner.py's FileResult says why)."""

    __slots__ = ("described", "rocm_only", "source_root", "units")

    def __init__(
        self,
        units: set[str],
        described: str,
        rocm_only: set[str] | None = None,
        source_root: str | None = None,
    ) -> None:
        self.units = units
        self.described = described
        """Where the list came from, for the report ('CMakeLists.txt with VLLM_GPU_LANG=HIP')."""
        self.rocm_only: set[str] = set() if rocm_only is None else rocm_only
        """Units only the ROCm build lists (the CUDA build's list lacks them): ROCm code, no findings."""
        self.source_root = source_root
        """Directory of the native sources relative to the scanned one ('' when the scan is inside it,
        None when it is outside the scan).
        Python under it is build tooling (kernel generators); Python elsewhere is the runtime, which
        the ROCm build ships as is, so its findings are in the build."""

    def in_build(self, rel: str) -> bool:
        """Whether a file not reached through the C++ units still belongs to the ROCm build."""
        if not rel.endswith(".py"):
            return False
        if self.source_root is None:  # the native sources lie outside the scanned directory
            return True
        return not (self.source_root == "" or rel.startswith(self.source_root + "/"))


class NotBuilt:
    """One file the ROCm build does not compile, with what it holds."""

    __slots__ = ("blockers", "kinds", "path")

    def __init__(
        self, path: str, kinds: dict[str, int] | None = None, blockers: list[str] | None = None
    ) -> None:
        self.path = path
        self.kinds: dict[str, int] = {} if kinds is None else kinds
        self.blockers: list[str] = [] if blockers is None else blockers
        """Constructs that need more than a rename to build for ROCm (CUDA-only libraries, tensor-core
        PTX, launch attributes), deduplicated."""

    def __repr__(self) -> str:
        return f"NotBuilt({self.path!r}: {self.summary()})"

    def summary(self) -> str:
        counts = ", ".join(f"{n} {k}" for k, n in sorted(self.kinds.items()))
        needs = f"; needs a port of {', '.join(self.blockers)}" if self.blockers else "; renames/guards only"
        return f"{counts}{needs}"


def _repo_root(start: str, relative_file: str) -> str | None:
    """The nearest of `start` (an absolute, resolved directory) and its ancestors holding the file."""
    candidate = start
    while True:
        if os.path.isfile(os.path.join(candidate, relative_file)):
            return candidate
        parent = os.path.dirname(candidate)
        if parent == candidate:
            return None
        candidate = parent


def read_build_list(scan_dir: str | os.PathLike[str], spec: RocmSources) -> BuildList | None:
    """The ROCm units under `scan_dir`, found from the nearest ancestor holding the spec's file;
    None when the tree has no such file (then every file counts as possibly compiled)."""
    named = spec.cmake or spec.setup_py
    if not named or not os.path.isdir(scan_dir):
        return None
    scanned = os.path.realpath(scan_dir)
    repo = _repo_root(scanned, named)
    if repo is None:
        return None
    if spec.cmake:
        if spec.cuda_variables:
            units, cuda_units = cmake_source_lists(repo, spec.cmake, spec.variables, spec.cuda_variables)
            rocm_only = units - cuda_units
        else:
            units, rocm_only = cmake_sources(repo, spec.cmake, spec.variables), set()
        settings = " ".join(f"{k}={v}" for k, v in spec.variables.items())
        described = f"{spec.cmake} targets with {settings}".strip()
    else:
        units, rocm_only = setup_py_sources(repo, named), set()
        described = f"sources of {named}"
    prefix = os.path.relpath(scanned, repo)
    return BuildList(_under(units, prefix), described, _under(rocm_only, prefix), _source_root(units, prefix))


def _source_root(units: set[str], prefix: str) -> str | None:
    if not units:
        return None
    common = os.path.commonpath([posixpath.dirname(u) or "." for u in units]).replace(os.sep, "/")
    if prefix == ".":
        return "" if common in ("", ".") else common
    if common == prefix or prefix.startswith(common + "/") or common in ("", "."):
        return ""
    return common[len(prefix) + 1 :] if common.startswith(prefix + "/") else None


def _under(paths: set[str], prefix: str) -> set[str]:
    """Repo-relative paths made relative to the scanned directory `prefix` (others dropped)."""
    if prefix == ".":
        return set(paths)
    return {p[len(prefix) + 1 :] for p in paths if p.startswith(prefix + "/")}


_CERTAIN_KINDS = frozenset(
    {
        "cuda_header",
        "cub",
        "cuda_std",
        "cuda_only_dep",
        "inline_ptx",
        "bf16_type",
        "fp16_type",
        "fp8_type",
        "stream_api",
        "cublas",
    }
)
"""In shared code these do not compile on ROCm (missing header, undeclared name, PTX)."""


def real_blocker(f: Failure) -> bool:
    """Whether a finding in a file the ROCm build already compiles is a real problem: a certain
    compile error, a warp intrinsic with a 32-bit mask or none on HIP, `warpSize` as a constant, or
    a warp-size literal next to a lane-width-sensitive collective. A 32-lane logical group (lane
    arithmetic with no such collective, explicit-width shuffles) is correct on a 64-lane wavefront."""
    if f.kind in _CERTAIN_KINDS:
        return True
    if f.kind == "warp_intrinsic":
        return bool(f.facts.get("certain"))
    if f.kind == "warp_size":
        return f.symbol == "warpSize" or bool(f.facts.get("near_collective"))
    return True


def _blocker(f: Failure) -> str | None:
    """The kind of port a finding asks for, named once per file (not per symbol)."""
    if f.kind == "cuda_only_dep":
        return f.symbol
    if f.kind == "inline_ptx":
        return "tensor-core/async PTX" if f.facts.get("judgment") else "inline PTX"
    if f.facts.get("fix_family") == "launch_attribute_guard":
        return "launch attributes/PDL"
    if f.facts.get("fix_family") == "no_hip_equivalent":
        return f.symbol
    if f.facts.get("fix_family") == "driver_api_guard":
        return "CUDA driver API"
    return None


def summarize_not_built(findings: list[Failure]) -> list[NotBuilt]:
    """Per file: finding counts by kind and the constructs that need a real port."""
    by_file: dict[str, NotBuilt] = {}
    counts: dict[str, Counter[str]] = {}
    for f in findings:
        entry = by_file.setdefault(f.file or "", NotBuilt(f.file or ""))
        counts.setdefault(entry.path, Counter())[f.kind] += 1
        blocker = _blocker(f)
        if blocker and blocker not in entry.blockers:
            entry.blockers.append(blocker)
    for path, entry in by_file.items():
        entry.kinds = dict(counts[path])
    return sorted(by_file.values(), key=lambda e: e.path)
