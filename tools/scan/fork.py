"""A tree's files scanned by this process and forked copies of it, side by side.

A process pool costs more than a tree of a few hundred files takes to scan (its imports, pickling,
worker start-up, an idle parent), and more than bare copies even on vLLM's Python package (3,289
files: 733 -> 669 ms). A bare `os.fork` costs ~1 ms: the copy has every module and memo the parent has,
takes runs of files from a queue it shares with the parent, and sends the results back through a pipe
as marshal'd plain values (the form the result cache stores). Results come back in the order of
`rels`, whichever process scanned them. A copy that fails (killed, out of memory, an exception) is not
trusted: the parent scans what it had taken itself, so a real error surfaces in the parent with its
traceback.
"""

from __future__ import annotations

import marshal
import os
import sys
import time
from collections.abc import Callable, Iterator

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
    and gains no wall time. A task runnable at one instant is often a daemon's wake-up of a millisecond
    or less (on this project's idle 2-core machine a quarter of scans saw one at start, and ran alone
    at ~1.4x the wall time): where one is seen, the count is read again a millisecond later, twice at
    most, and the fewest count (see fewest_others)."""
    try:
        cores = len(os.sched_getaffinity(0))
        others = fewest_others(_runnable_others())
    except (AttributeError, OSError, IndexError, ValueError):
        return 1
    return max(1, min(cores, cores - others))


def fewest_others(readings: Iterator[int]) -> int:
    """The fewest other runnable tasks of up to three readings, taken only while each shows some."""
    fewest = next(readings)
    for _ in range(2):
        if fewest == 0:
            break
        fewest = min(fewest, next(readings))
    return fewest


def _runnable_others() -> Iterator[int]:
    """Runnable tasks other than this process, now, then a millisecond after each reading asked for."""
    while True:
        with open("/proc/loadavg", encoding="ascii") as fh:
            text = fh.read()
        yield int(text.split()[3].split("/")[0]) - 1
        time.sleep(0.001)


def can_fork() -> bool:
    """Forking is safe only without other threads (a copy would hold their locks, never released)."""
    if not hasattr(os, "fork"):
        return False
    threading = sys.modules.get("threading")
    return threading is None or threading.active_count() == 1


RUN = 24
"""Files per run: the unit the processes take from their shared queue (see scan_forked)."""
QUEUE_MAX = 2048
"""Runs a queue holds at most: 4 KiB of run numbers, what any pipe holds (a user over the kernel's pipe
quota gets one page), so it is written whole before anyone reads it."""


def scan_forked(
    rels: list[str],
    parts: int,
    scan: Callable[[list[str]], list[FileResult]],
    meanwhile: Callable[[], object] | None = None,
) -> list[FileResult]:
    """`scan(rels)` spread over this process and `parts - 1` forked copies; results in `rels` order.
    `meanwhile`: run here once the copies are started, before this process takes its first files.

    The files are cut into runs of RUN neighbours (neighbours share headers, macros and names, whose
    memoised answers a process works out once per run it takes) and every process takes the next run
    from one queue when it is done with its last: a pipe holding the run numbers, which each process
    reads two bytes at a time (the kernel hands each read to one reader). However the files' costs
    fall, and whatever `meanwhile` costs, no process waits for another by more than about one run.
    (On vLLM's csrc and sgl-kernel halves dealt in advance were already near even: the same wall time.)"""
    size = max(RUN, -(-len(rels) // QUEUE_MAX))  # longer runs for a huge tree, never a full queue
    runs = [rels[i : i + size] for i in range(0, len(rels), size)]
    queue = _queue(len(runs))
    children: list[tuple[int, int]] = []
    try:
        children.extend(_start(scan, runs, queue) for _ in range(parts - 1))  # kept as each starts
        if meanwhile is not None:
            meanwhile()
        results = {r.path: r for run in _taken(queue, runs) for r in scan(run)}
    finally:  # an error here leaves the copies nothing more to take, and still reaps them
        while os.read(queue, 4096):
            pass
        os.close(queue)
        collected = [_collect(pid, fd) for pid, fd in children]
    for packed in collected:
        if packed is not None:
            results.update((p[0], unpack(p)) for p in packed)
    missing = [rel for rel in rels if rel not in results]  # what a copy that failed had taken
    if missing:
        results.update((r.path, r) for r in scan(missing))
    return [results[rel] for rel in rels]


def _queue(count: int) -> int:
    """The read end of a pipe holding the numbers 0..count-1 (two bytes each), its write end closed."""
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, b"".join(n.to_bytes(2, "big") for n in range(count)))
    finally:
        os.close(write_end)
    return read_end


def _taken(queue: int, runs: list[list[str]]) -> Iterator[list[str]]:
    """The runs this process takes from the queue, each as it is ready for it, until none is left."""
    while len(number := os.read(queue, 2)) == 2:
        yield runs[int.from_bytes(number, "big")]


def _start(
    scan: Callable[[list[str]], list[FileResult]], runs: list[list[str]], queue: int
) -> tuple[int, int]:
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the copy: scan, write, and leave without running the parent's exit handlers
        status = 1
        try:
            os.close(read_end)
            data = marshal.dumps([pack(r) for run in _taken(queue, runs) for r in scan(run)])
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
