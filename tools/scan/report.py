"""What a tree scan returns (tools/scan/repo.py makes it), and the error it raises when it cannot start."""

from __future__ import annotations

from tools.records import Failure
from tools.scan.rocm_build import NotBuilt


class ScanError(ValueError):
    """The scan cannot start (bad path); the message is one line for the user."""


class ScanReport:
    """A tree scan: its findings plus what was skipped and why (a plain class, as FileResult is)."""

    __slots__ = (
        "build",
        "files_scanned",
        "findings",
        "hipify",
        "not_built",
        "outside_build",
        "rocm_only",
        "root",
        "seconds",
        "skipped",
    )

    def __init__(
        self,
        root: str,
        findings: list[Failure] | None = None,
        files_scanned: int = 0,
        skipped: list[tuple[str, str]] | None = None,
        hipify: bool = False,
        seconds: float = 0.0,
        build: str | None = None,
        not_built: list[NotBuilt] | None = None,
        outside_build: list[Failure] | None = None,
        rocm_only: int = 0,
    ) -> None:
        self.root = root
        self.findings: list[Failure] = [] if findings is None else findings
        self.files_scanned = files_scanned
        self.skipped: list[tuple[str, str]] = [] if skipped is None else skipped
        """(repo-relative path, reason): binary, too large, unreadable file or directory, not Python."""
        self.hipify = hipify
        self.seconds = seconds
        self.build = build
        """Where the ROCm source list came from; None when the scan had none (every file may compile)."""
        self.not_built: list[NotBuilt] = [] if not_built is None else not_built
        """Files with findings that the ROCm build does not compile, summarised per file."""
        self.outside_build: list[Failure] = [] if outside_build is None else outside_build
        """The findings behind `not_built`, one by one (for JSON consumers and evaluations)."""
        self.rocm_only = rocm_only
        """Files only the ROCm build compiles (.hip, rocm/, unguarded hip/*.h): never findings."""

    def __repr__(self) -> str:
        return f"ScanReport({self.root!r}, {len(self.findings)} finding(s), {self.files_scanned} file(s))"
