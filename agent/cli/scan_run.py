"""One `rocport scan`, from parsed options to exit status: the typer command (scan.py) and the
typer-free start (scan_argv.py) both end here, so they scan, print and exit alike."""

from __future__ import annotations

from agent.cli.scan_output import ScanUsageError, emit

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (tools/__init__.py)
if TYPE_CHECKING:
    from os import PathLike


def scan_exit_status(
    path: str | PathLike[str],
    *,
    profile: str | None,
    hipify: bool | None,
    fmt: str,
    output: str | PathLike[str] | None,
    jobs: int | None,
    include_vendored: bool,
    exclude: list[str] | None,
    select: list[str] | None,
    statistics: bool,
    cache: bool,
) -> int:
    """Scan, print the report, and return the exit status: 1 when findings remain (files the ROCm
    build compiles, when the profile names its source list), else 0. ScanUsageError: the one line
    to show (exit 2)."""
    from tools.scan import ScanError, scan_report
    from tools.scan.cache import default_cache_dir

    try:
        report = scan_report(
            path,
            profile=load_scan_profile(profile),
            hipify=hipify,
            jobs=jobs,
            include_vendored=include_vendored,
            exclude=tuple(exclude) if exclude is not None else None,
            select=tuple(select or ()),
            cache_dir=default_cache_dir() if cache else None,
        )
    except ScanError as exc:
        raise ScanUsageError(str(exc)) from exc
    emit(report, fmt, output, statistics)
    return 1 if report.findings else 0


def load_scan_profile(name_or_path: str | None):
    """The framework profile a scan reads: its scan part straight from YAML that plainly fits the
    model (agent.profile_shape), else the profile validated by pydantic (the same errors as ever)."""
    if name_or_path is None:
        return None
    from agent.profile_shape import scan_view

    view = scan_view(name_or_path)
    if view is not None:
        return view
    from agent.profiles import ProfileError, load_profile

    try:
        return load_profile(name_or_path)
    except ProfileError as exc:
        raise ScanUsageError(str(exc)) from exc
