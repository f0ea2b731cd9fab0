"""Static scan of a repo for CUDA-only constructs that a ROCm build trips on (preprocessor-aware).

`scan_repo(path)` returns `Failure` records with source="scan", one per construct outside ROCm
branches, each with its fix family in `facts["fix_family"]`. `to_sarif` renders them for GitHub
code scanning.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tools.records import Failure
from tools.scan.repo import ScanError, ScanReport, scan_tree
from tools.scan.sarif import to_sarif

if TYPE_CHECKING:
    from agent.profiles import Profile


def resolve_hipify(profile: Profile | str | None, hipify: bool | None) -> bool:
    """Whether the build hipifies: an explicit flag wins, else the profile's `hipify_at_build`."""
    if hipify is not None:
        return hipify
    if profile is None:
        return False
    if isinstance(profile, str):
        from agent.profiles import ProfileError, load_profile

        try:
            profile = load_profile(profile)
        except ProfileError as exc:
            raise ScanError(str(exc)) from exc
    return bool(profile.hipify_at_build)


def scan_report(path: str | Path, *, profile: Profile | str | None = None, jobs: int | None = None,
                hipify: bool | None = None, include_vendored: bool = False) -> ScanReport:
    """Scan a repo (or one file): findings plus what was skipped and why."""
    return scan_tree(path, hipify=resolve_hipify(profile, hipify), jobs=jobs,
                     include_vendored=include_vendored)


def scan_repo(path: str | Path, *, profile: Profile | str | None = None, jobs: int | None = None,
              hipify: bool | None = None, include_vendored: bool = False) -> list[Failure]:
    """Findings for every CUDA-only construct a ROCm build of the repo would compile, sorted."""
    return scan_report(path, profile=profile, jobs=jobs, hipify=hipify,
                       include_vendored=include_vendored).findings


def scan_file(path: str | Path, *, root: str | Path | None = None, profile: Profile | str | None = None,
              hipify: bool | None = None) -> list[Failure]:
    """Findings of one file on its own (compat headers it includes are not followed); paths in the
    findings are relative to `root` (default: the file's directory)."""
    if not Path(path).is_file():
        raise ScanError(f"{path}: not a file; pass a C++/CUDA or Python source file")
    return scan_tree(path, root=root, hipify=resolve_hipify(profile, hipify), jobs=1).findings


__all__ = ["ScanError", "ScanReport", "scan_file", "scan_repo", "scan_report", "to_sarif"]
