"""The compile cache runs share on one machine (host side; the sandbox never sees the shared folder).

A run's compile service starts from a copy of the shared cache (`seed`): its full builds then reuse every
unit an earlier run compiled from the same input (the cache's keys are the compiler, its flags and the
digests of what it read; never a path of the run's own). When the run ends, the entries it added are
copied back (`publish`), but only by a run whose sandbox ran nothing an LLM proposed (the caller's
decision): a sandbox can write anything into its own cache, and an object planted there must not reach
other runs. Only what the cache's layout names is copied, and only regular files: a symlink a build
left in its cache (to a host secret, say) is never followed, in either direction. Past MAX_SHARED_BYTES
the oldest entries go first (first in, first out: a run's copy does not say which entries it used).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import tempfile
from pathlib import Path

_LAYOUT = {
    "e": re.compile(r"[0-9a-f]{64}\.(?:json|o)"),  # entries: the answer and its object, by key
    "l": re.compile(r"[0-9a-f]{64}"),  # line-marker-free input -> entry
    "m": re.compile(r"[0-9a-f]{64}\.json"),  # command -> what it read (direct hits)
}
MAX_ENTRY_BYTES = 512 * 1024 * 1024
"""Larger files are not shared (no object of a real kernel comes near)."""
MAX_SHARED_BYTES = 20 * 1024**3
"""A shared cache past this drops its oldest entries (by when they were published) to 90% of it."""


def seed(shared: Path, cache: Path) -> int:
    """Copy the shared cache into a service's own `cache` before it starts; the number of files."""
    return _copy_entries(shared, cache, replace=True)


def publish(cache: Path, shared: Path, limit: int = MAX_SHARED_BYTES) -> int:
    """Copy what a run's cache holds and the shared one lacks (manifests: the run's newer list) into
    `shared`, each file whole (a temporary name, then a rename); the number of files copied. Past `limit`
    bytes of entries, the oldest are dropped (a manifest or link naming one then finds nothing: a miss)."""
    copied = _copy_entries(cache, shared, replace=False)
    _trim(shared / "e", limit)
    return copied


def _trim(entries: Path, limit: int) -> None:
    by_key: dict[str, list[os.stat_result]] = {}
    try:
        names = os.listdir(entries)
    except OSError:
        return
    for name in names:
        if _LAYOUT["e"].fullmatch(name):
            with contextlib.suppress(OSError):
                by_key.setdefault(name.split(".")[0], []).append(os.lstat(entries / name))
    total = sum(st.st_size for stats in by_key.values() for st in stats)
    if total <= limit:
        return
    for key in sorted(by_key, key=lambda k: max(st.st_mtime for st in by_key[k])):
        for suffix in (".json", ".o"):  # the answer first: an entry is never found without its object
            with contextlib.suppress(FileNotFoundError):
                (entries / (key + suffix)).unlink()
        total -= sum(st.st_size for st in by_key[key])
        if total <= limit * 0.9:
            return


def _copy_entries(src: Path, dst: Path, *, replace: bool) -> int:
    copied = 0
    for folder, name_form in _LAYOUT.items():
        if any(p.is_symlink() for p in (src.parent, src, src / folder)):
            continue  # a link the sandbox put in place of its spool or cache: whatever it points at stays
        try:
            names = sorted(os.listdir(src / folder))
        except OSError:
            continue
        for name in names:
            if not name_form.fullmatch(name):
                continue
            target = dst / folder / name
            if not replace and folder != "m" and target.exists():
                continue  # an entry's key is its content: the one there is the same
            copied += _copy_regular(src / folder / name, target)
    return copied


def _copy_regular(source: Path, target: Path) -> int:
    """1 when `source` is a regular file (opened without following a link; the caller checked its
    folders) and was copied whole."""
    try:
        fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return 0
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_ENTRY_BYTES:
        os.close(fd)
        return 0
    with os.fdopen(fd, "rb") as fh:
        target.parent.mkdir(parents=True, exist_ok=True)
        out_fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
        try:
            with os.fdopen(out_fd, "wb") as out:
                shutil.copyfileobj(fh, out)
            os.replace(tmp, target)
        except OSError:
            Path(tmp).unlink(missing_ok=True)
            return 0
    return 1
