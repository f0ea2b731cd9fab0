"""A small tree shared between this process and forked copies: same results, same order, and a copy
that fails costs time, never a result."""

from __future__ import annotations

import os
import resource
from pathlib import Path

from tests.tools.scan.helpers import write
from tools.scan import scan_report
from tools.scan.fork import QUEUE_MAX, RUN, can_fork, fewest_others, idle_cores, scan_forked
from tools.scan.scanner import scan_path

KERNEL = (
    '#include <cuda_runtime.h>\n#include "common.h"\n'
    "__device__ float f(float v) { return __shfl_xor_sync(0xffffffff, v, 1) + threadIdx.x % 32; }\n"
    "#ifndef USE_ROCM\n__device__ int g() { return __activemask(); }\n#endif\n"
)


def _tree(tmp_path, n=150):
    files = {f"csrc/d{i % 9}/k{i}.cu": KERNEL * (1 + i % 5) for i in range(n)}
    files["csrc/common.h"] = (
        "#pragma once\n#ifdef USE_ROCM\n#define __shfl_xor_sync(m, v, l) __shfl_xor(v, l)\n#endif\n"
    )
    return write(tmp_path / "repo", files)


def _everything(report):
    return (
        [f.to_dict() for f in report.findings],
        [f.to_dict() for f in report.outside_build],
        report.files_scanned,
        report.skipped,
    )


def test_a_slow_copy_takes_fewer_runs_and_neighbours_stay_together(tmp_path):
    """The processes take runs of RUN neighbouring files from one queue as each gets free: a copy that
    is slow (here it sleeps 1 s a run) leaves the runs it has not taken to this process, which would
    otherwise wait for it with half the tree dealt to it in advance."""
    import time

    root = _tree(tmp_path, n=8 * RUN)
    rels = sorted(str(p.relative_to(root)) for p in root.rglob("*.cu"))
    parent, taken = os.getpid(), tmp_path / "taken"
    taken.mkdir()

    def scan(share):
        if os.getpid() != parent:
            (taken / share[0].replace("/", "_")).write_text("\n".join(share))
            time.sleep(1)
        return [scan_path(root, rel) for rel in share]

    results = scan_forked(rels, 2, scan)
    assert [r.path for r in results] == rels
    by_copy = [p.read_text().split("\n") for p in taken.iterdir()]
    assert 1 <= len(by_copy) <= 2  # of 8 runs; dealt in turn, it would have had 4
    for run in by_copy:  # each a run of RUN neighbours, as sorted
        assert len(run) == RUN and rels[rels.index(run[0]) : rels.index(run[0]) + RUN] == run


def test_idle_cores_counts_only_cores_this_process_may_use():
    assert 1 <= idle_cores() <= len(os.sched_getaffinity(0))


def test_a_task_seen_runnable_once_is_read_again_and_a_busy_one_still_counts():
    """A daemon's wake-up at the instant of the first reading no longer keeps the scan to one process;
    a task runnable in every reading (three at most) still does."""
    taken: list[int] = []

    def readings(values):
        for v in values:
            taken.append(v)
            yield v

    assert fewest_others(readings([0, 5, 5])) == 0 and taken == [0]  # nothing else: one reading
    taken.clear()
    assert fewest_others(readings([1, 0, 7])) == 0 and taken == [1, 0]  # a blip: read again
    taken.clear()
    assert fewest_others(readings([2, 1, 1, 0])) == 1 and taken == [2, 1, 1]  # busy all along


def test_an_unreadable_build_list_is_a_scan_error_with_copies_scanning(tmp_path):
    """The build list is read while forked copies scan: its error still ends the scan with the one-line
    ScanError, and no copy is left behind."""
    import pytest
    import yaml

    from agent.profiles import load_profile
    from tools.scan import ScanError

    root = _tree(tmp_path)
    (root / "setup_rocm.py").write_text("sources = [\n")  # a syntax error: unreadable
    data = yaml.safe_load(Path("agent/profiles/tinyserve.yaml").read_text())
    data["rocm_sources"] = {"setup_py": "setup_rocm.py"}
    (tmp_path / "profile.yaml").write_text(yaml.safe_dump(data))
    profile = load_profile(str(tmp_path / "profile.yaml"))
    with pytest.raises(ScanError, match="cannot read the ROCm source list"):
        scan_report(root, profile=profile, jobs=2)
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)  # no child of this process is left, running or unreaped


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def test_forked_copies_report_what_one_process_reports(tmp_path):
    root = _tree(tmp_path)
    before = _children_cpu()
    one = scan_report(root, jobs=1)
    assert one.findings and _children_cpu() == before  # -j 1: this process alone
    assert _everything(scan_report(root, jobs=2)) == _everything(one)
    assert _everything(scan_report(root, jobs=5)) == _everything(one)
    # the copies did scan (unless another thread runs here: then forking is unsafe and skipped)
    assert _children_cpu() > before or not can_fork()


def test_a_copy_that_fails_has_its_share_scanned_here(tmp_path):
    root = _tree(tmp_path)
    rels = sorted(str(p.relative_to(root)) for p in root.rglob("*.cu"))
    parent = os.getpid()

    def scan(share):
        if os.getpid() != parent:
            raise MemoryError("the copy runs out of memory")
        return [scan_path(root, rel) for rel in share]

    results = scan_forked(rels, 3, scan)
    assert [r.path for r in results] == rels
    assert [r.findings for r in results] == [scan_path(root, rel).findings for rel in rels]


def test_a_tree_longer_than_the_queue_is_taken_in_longer_runs():
    """More runs of RUN files than the queue holds (it is written whole before anyone reads it): the
    runs grow, so the queue never fills, and every file is scanned once."""
    from tools.scan.scanner import FileResult

    rels = [f"k{i:06}.cu" for i in range(QUEUE_MAX * RUN + 5)]
    calls: list[list[str]] = []

    def scan(share):
        calls.append(share)
        return [FileResult(rel) for rel in share]

    assert [r.path for r in scan_forked(rels, 1, scan)] == rels
    assert len(calls) <= QUEUE_MAX and sorted(rel for run in calls for rel in run) == rels


def test_with_every_other_core_kept_busy_the_scan_takes_one():
    import subprocess
    import sys
    import time

    hogs = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"])
        for _ in range(len(os.sched_getaffinity(0)) - 1)
    ]
    try:
        time.sleep(0.2)  # running, not starting
        assert idle_cores() == 1
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
