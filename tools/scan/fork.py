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

from tools.scan.cache import pack, unpack
from tools.scan.scanner import FileResult

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (tools/__init__.py)
if TYPE_CHECKING:
    from tools.scan.cache import PackedResult

FORK_MIN_FILES = 64
"""Below this a tree scans in a few milliseconds: forking would not pay."""


def idle_cores() -> int:
    """How many of this process's cores nothing else wants now (1 at least): its cores less the other
    runnable tasks (Linux's /proc/loadavg counts them at this instant, this process included; the load
    averages lag, and a scan run again and again would count its own past runs). A default for forked
    copies that only takes cores that would idle: on a busy machine a copy costs CPU (its own memos)
    and gains no wall time."""
    try:
        cores = len(os.sched_getaffinity(0))
        with open("/proc/loadavg", encoding="ascii") as fh:
            runnable = int(fh.read().split()[3].split("/")[0])
    except (AttributeError, OSError, IndexError, ValueError):
        return 1
    return max(1, min(cores, cores - (runnable - 1)))


def can_fork() -> bool:
    """Forking is safe only without other threads (a copy would hold their locks, never released)."""
    if not hasattr(os, "fork"):
        return False
    threading = sys.modules.get("threading")
    return threading is None or threading.active_count() == 1


RUN = 24
"""Files per run when `rels` is dealt out (see shares)."""


def shares(rels: list[str], parts: int, spare: int = 0) -> list[list[str]]:
    """`rels` dealt out to `parts` processes in runs of RUN neighbouring files: neighbours share headers,
    macros and names, whose memoised answers each process would otherwise work out again, and runs dealt
    in turn even out a cost that bytes do not predict (cut into two byte-equal halves, vLLM's csrc took
    23 and 31 ms). The first share (this process's) hands its last `spare` runs to the others: it has
    other work to do meanwhile."""
    runs = [rels[i : i + RUN] for i in range(0, len(rels), RUN)]
    dealt: list[list[list[str]]] = [runs[k::parts] for k in range(parts)]
    for n in range(min(spare, len(dealt[0]) - 1) if parts > 1 else 0):
        dealt[1 + n % (parts - 1)].append(dealt[0].pop())
    return [[rel for run in share for rel in run] for share in dealt]


def scan_forked(
    rels: list[str],
    parts: int,
    scan: Callable[[list[str]], list[FileResult]],
    meanwhile: Callable[[], object] | None = None,
) -> list[FileResult]:
    """`scan(rels)` spread over this process and `parts - 1` forked copies; results in `rels` order.
    `meanwhile`: run here once the copies are started, before this process scans its (smaller) share."""
    mine, *theirs = shares(rels, parts, spare=1 if meanwhile else 0)
    children = [(_start(scan, share), share) for share in theirs]
    try:
        if meanwhile is not None:
            meanwhile()
        results = {r.path: r for r in scan(mine)}
    finally:  # an error here still reaps the copies
        collected = [(_collect(pid, fd), share) for (pid, fd), share in children]
    for packed, share in collected:
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
