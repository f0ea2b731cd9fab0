"""A small tree shared between this process and forked copies: same results, same order, and a copy
that fails costs time, never a result."""

from __future__ import annotations

import os
import resource

from tests.tools.scan.helpers import write
from tools.scan import scan_report
from tools.scan.fork import can_fork, scan_forked, shares
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


def test_shares_keep_the_order_and_split_the_bytes(tmp_path):
    root = _tree(tmp_path)
    rels = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
    parts = shares(str(root), rels, 3)
    assert [rel for part in parts for rel in part] == rels
    weights = [sum(os.path.getsize(root / rel) for rel in part) for part in parts]
    assert len(parts) == 3 and max(weights) < 1.5 * min(weights)


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

    results = scan_forked(str(root), rels, 3, scan)
    assert [r.path for r in results] == rels
    assert [r.findings for r in results] == [scan_path(root, rel).findings for rel in rels]
