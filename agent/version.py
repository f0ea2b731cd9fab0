"""rocport's installed version, for provenance in results and reports."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version


def rocport_version() -> str:
    """The installed package version, '0+unknown' when run from a tree that was never installed."""
    try:
        return version("rocport")
    except PackageNotFoundError:
        return "0+unknown"
