"""A small tree's files scanned by this process and forked copies of it, side by side.

A process pool costs more than a tree of a few hundred files takes to scan (its imports, pickling,
worker start-up). A bare `os.fork` costs ~1 ms: the copy has every module and memo the parent has,
scans its share and sends the results back through a pipe as marshal'd plain values (the form the
result cache stores). Results come back in the order of `rels`, whichever process scanned them. A
copy that fails (killed, out of memory, an exception) is not trusted: the parent scans its share
itself, so a real error surfaces in the parent with its traceback.
"""

from __future__ import annotations

import marshal
import os
import sys
from collections.abc import Callable
from itertools import pairwise

from tools.scan.cache import PackedResult, pack, unpack
from tools.scan.scanner import FileResult

FORK_MIN_FILES = 64
"""Below this a tree scans in a few milliseconds: forking would not pay."""


def can_fork() -> bool:
    """Forking is safe only without other threads (a copy would hold their locks, never released)."""
    if not hasattr(os, "fork"):
        return False
    threading = sys.modules.get("threading")
    return threading is None or threading.active_count() == 1


def shares(root: str, rels: list[str], parts: int) -> list[list[str]]:
    """`rels` cut into `parts` runs of about the same number of bytes, in the order of `rels`:
    neighbouring files share headers, macros and names, whose memoised answers each process
    would otherwise work out again."""
    sizes = []
    for rel in rels:
        try:
            sizes.append(os.stat(os.path.join(root, rel)).st_size + 1)
        except OSError:
            sizes.append(1)
    total, done = sum(sizes), 0
    cuts: list[int] = []
    for i, size in enumerate(sizes):
        if done >= total * (len(cuts) + 1) / parts:
            cuts.append(i)
        done += size
    bounds = [0, *cuts[: parts - 1], len(rels)]
    return [rels[a:b] for a, b in pairwise(bounds)]


def scan_forked(
    root: str, rels: list[str], parts: int, scan: Callable[[list[str]], list[FileResult]]
) -> list[FileResult]:
    """`scan(rels)` spread over this process and `parts - 1` forked copies; results in `rels` order."""
    mine, *theirs = shares(root, rels, parts)
    children = [(_start(scan, share), share) for share in theirs]
    results = {r.path: r for r in scan(mine)}
    for (pid, fd), share in children:
        packed = _collect(pid, fd)
        if packed is None:  # the copy failed: scan its share here
            results.update((r.path, r) for r in scan(share))
        else:
            results.update((p[0], unpack(p)) for p in packed)
    return [results[rel] for rel in rels]


def _start(scan: Callable[[list[str]], list[FileResult]], share: list[str]) -> tuple[int, int]:
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the copy: scan, write, and leave without running the parent's exit handlers
        status = 1
        try:
            os.close(read_end)
            data = marshal.dumps([pack(r) for r in scan(share)])
            with os.fdopen(write_end, "wb") as out:
                out.write(data)
            status = 0
        finally:
            os._exit(status)
    os.close(write_end)
    return pid, read_end


def _collect(pid: int, fd: int) -> list[PackedResult] | None:
    """A copy's results, or None when it did not finish cleanly."""
    with os.fdopen(fd, "rb") as stream:
        data = stream.read()
    _, status = os.waitpid(pid, 0)
    if status != 0:
        return None
    try:
        packed: list[PackedResult] = marshal.loads(data)  # noqa: S302 (plain values our own forked copy wrote)
    except (EOFError, ValueError, TypeError):
        return None
    return packed
