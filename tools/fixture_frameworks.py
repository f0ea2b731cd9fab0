"""The fixture frameworks shipped with rocport (evals/frameworks/: tinyserve), copied clean wherever a
task, a sweep's bundled example or a benchmark needs a checkout of one."""

from __future__ import annotations

import shutil
from pathlib import Path

FRAMEWORKS_DIR = Path(__file__).resolve().parents[1] / "evals" / "frameworks"
# Not part of a clean copy: build outputs and caches from local runs of the fixture.
_IGNORE = shutil.ignore_patterns("build", "__pycache__", "*.pyc", "*.o", "*.so")


class FixtureFrameworkError(ValueError):
    """No such fixture framework, or the destination is not empty; the message says which."""


def copy_framework(framework: str, dest: Path) -> Path:
    """Copy the clean framework tree (no build outputs) to `dest`, which must not exist yet."""
    src = FRAMEWORKS_DIR / framework
    if not src.is_dir():
        raise FixtureFrameworkError(f"no fixture framework {framework!r} under {FRAMEWORKS_DIR}")
    if dest.exists() and any(dest.iterdir()):
        raise FixtureFrameworkError(f"{dest} is not empty: materialize into a new directory")
    shutil.copytree(src, dest, ignore=_IGNORE, dirs_exist_ok=True)
    return dest
