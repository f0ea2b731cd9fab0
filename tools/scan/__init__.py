"""Static scan of a repo for CUDA-only constructs that a ROCm build trips on (preprocessor-aware).

`scan_repo(path)` returns `Failure` records with source="scan", one per construct outside ROCm
branches, each with its fix family in `facts["fix_family"]`. `to_sarif` renders them for GitHub
code scanning.

What counts as guarded (decided here, tested in tests/tools/scan):
- A construct is reported when the ROCm build may compile it: every enclosing `#if` is evaluated
  under a ROCm configuration (USE_ROCM, __HIP_PLATFORM_AMD__, __HIPCC__, __HIP__ defined; __CUDACC__,
  __NVCC__, __CUDA_ARCH__, CUDA_VERSION not). So the `#else` of `#ifdef USE_ROCM`, `#ifndef USE_ROCM`
  and `#if !defined(__HIP_PLATFORM_AMD__)` regions are CUDA-only and correctly guarded: no finding,
  whether or not a ROCm branch exists. Macros the scanner cannot know (`#ifdef ENABLE_BF16`) do not
  hide a construct. `#if __CUDA_ARCH__ >= 800` is false on ROCm, so its `#else` is what ROCm compiles.
- A header that is only ever included from CUDA-only branches (directly or through other such
  headers) is CUDA-only: its constructs are not reported. A header nobody includes is scanned.
- Comments and string literals never produce findings.
- A CUDA name that the file or a header it includes defines for the ROCm build (a compat macro,
  typedef or `using`) is the project's own name and is not reported; nor is a "CUDA header" the
  repo itself provides (a shim).
- Identifiers (intrinsics, types, API names) are reported once per file with every line in
  `facts["lines"]`; includes, warp-size literals and inline asm once per occurrence.
- A profile with `hipify_at_build: true` (or `hipify=True`) drops what torch's hipify translates
  (see hipify.py); warp width, warp-size literals, inline PTX and fp8 types are never hidden.
- Python: imports are guarded inside `try/except ImportError` (or a broad Exception), under a
  platform check that is false on ROCm (`is_cuda()`, `not is_hip()`, `torch.version.hip is None`),
  after an early exit taken on ROCm, or under an availability check of the package itself.
"""

from __future__ import annotations

import os

from tools.records import Failure
from tools.scan.repo import scan_tree
from tools.scan.report import ScanError, ScanReport
from tools.scan.rocm_build import DEFAULT_PROFILE_EXCLUDES, BuildList, read_build_list
from tools.scan.sarif import to_sarif

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (tools/__init__.py)
if TYPE_CHECKING:
    from typing import Protocol

    from tools.rocm_sources import RocmSources

    class ScanProfile(Protocol):
        """What a scan reads of a framework profile (agent.profiles.Profile is one; callers load it)."""

        name: str
        hipify_at_build: bool
        rocm_sources: RocmSources | None


def resolve_hipify(profile: ScanProfile | None, hipify: bool | None) -> bool:
    """Whether the build hipifies: an explicit flag wins, else the profile's `hipify_at_build`."""
    if hipify is not None:
        return hipify
    return bool(profile and profile.hipify_at_build)


def scan_report(
    path: str | os.PathLike[str],
    *,
    profile: ScanProfile | None = None,
    jobs: int | None = None,
    hipify: bool | None = None,
    include_vendored: bool = False,
    exclude: tuple[str, ...] | None = None,
    select: tuple[str, ...] = (),
    cache_dir: str | os.PathLike[str] | None = None,
) -> ScanReport:
    """Scan a repo (or one file): findings plus what was skipped and why. With a profile, the ROCm
    build's own source list splits findings (compiled for ROCm / not built) and tests/, benchmarks/,
    docs/ are left out unless `exclude` says otherwise. With `cache_dir` (see tools.scan.cache),
    files unchanged since the last scan of the tree reuse their stored results."""
    loaded = profile
    if exclude is None:
        exclude = DEFAULT_PROFILE_EXCLUDES if loaded is not None else ()
    build = None
    if loaded is not None and loaded.rocm_sources is not None:
        sources, name = loaded.rocm_sources, loaded.name

        def build() -> BuildList | None:  # read while forked copies scan (tools/scan/fork.py)
            try:
                return read_build_list(path, sources)
            except (OSError, SyntaxError, ValueError) as exc:
                raise ScanError(
                    f"cannot read the ROCm source list named by profile {name}: {exc}; "
                    f"fix the profile's rocm_sources or scan without --profile"
                ) from exc

    return scan_tree(
        path,
        hipify=resolve_hipify(loaded, hipify),
        jobs=jobs,
        include_vendored=include_vendored,
        exclude=tuple(exclude),
        build=build,
        select=tuple(select),
        cache_dir=cache_dir,
    )


def scan_repo(
    path: str | os.PathLike[str],
    *,
    profile: ScanProfile | None = None,
    jobs: int | None = None,
    hipify: bool | None = None,
    include_vendored: bool = False,
) -> list[Failure]:
    """Findings for every CUDA-only construct a ROCm build of the repo would compile, sorted."""
    return scan_report(
        path, profile=profile, jobs=jobs, hipify=hipify, include_vendored=include_vendored
    ).findings


def scan_file(
    path: str | os.PathLike[str],
    *,
    root: str | os.PathLike[str] | None = None,
    profile: ScanProfile | None = None,
    hipify: bool | None = None,
) -> list[Failure]:
    """Findings of one file on its own (compat headers it includes are not followed); paths in the
    findings are relative to `root` (default: the file's directory)."""
    if not os.path.isfile(path):
        raise ScanError(f"{path}: not a file; pass a C++/CUDA or Python source file")
    return scan_tree(path, root=root, hipify=resolve_hipify(profile, hipify), jobs=1).findings


__all__ = ["ScanError", "ScanReport", "scan_file", "scan_repo", "scan_report", "to_sarif"]
