"""The scan benchmark runs end to end on a small tree and prints both timings and the ratio."""

from __future__ import annotations

import re

from evals.bench_scan import main
from evals.grep_patterns import ROUND_ONE, scan_pattern, unmatched
from evals.scan_corpus import write_tree
from tools.scan import scan_report


def test_bench_prints_grep_scan_and_ratio(capsys):
    main(["--kernels", "12", "--headers", "3", "--bindings", "2", "--python", "10", "--repeat", "1"])
    out = capsys.readouterr().out
    assert "tree: 28 files" in out
    assert re.search(r"grep -rE \(raw patterns\)\s+wall\s+[\d.]+ s", out)
    assert re.search(r"scan_report \(library\)\s+wall\s+[\d.]+ s.*\d+ findings\s+ratio [\d.]+x grep", out)
    assert re.search(r"rocport scan \(CLI, json\)\s+wall\s+[\d.]+ s", out)


BLOCKERS = """\
#include <cutlass/gemm/device/gemm.h>
#include <cublasLt.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;
__global__ void k(float* out, const float* in, int n) {
  constexpr int kPerLane = 256 / 32;
  float v = cg::reduce(cg::tiled_partition<32>(cg::this_thread_block()), in[threadIdx.x], cg::plus<float>());
  asm("mov.u32 %0, %%laneid;" : "=r"(n));
  out[threadIdx.x] = v + kPerLane + warpSize;
}
void launch(cudaLaunchConfig_t cfg, CUstream s) { cuLaunchKernel(0, 1, 1, 1, 1, 1, 1, 0, s, 0, 0); }
"""


def test_the_grep_floor_matches_every_line_the_scan_reports(tmp_path):
    """grep is timed on the scan's own constructs: every reported line matches its pattern, while the
    round-one pattern misses the constructs the scan has learnt since (CUTLASS, cg::reduce, any asm)."""
    write_tree(tmp_path, kernels=30, headers=8, bindings=4, python=20)
    (tmp_path / "blockers.cu").write_text(BLOCKERS)
    report = scan_report(tmp_path)
    reported = [(f.file or "", f.line or 0) for f in report.findings]
    assert any(file == "blockers.cu" for file, _ in reported) and len(reported) > 20
    assert unmatched(tmp_path, reported, scan_pattern()) == []
    missed = {file for file, _ in unmatched(tmp_path, reported, ROUND_ONE)}
    assert "blockers.cu" in missed


def test_alternated_runs_each_side_as_often_and_takes_turns_going_first():
    from evals.bench_scan import alternated

    order: list[str] = []
    first, second = alternated(4, lambda: order.append("a"), lambda: order.append("b"))
    assert len(first) == len(second) == 4 and all(w >= 0 for w in first + second)
    assert "".join(order) == "abbaabba"  # neither always runs right after the other's cache warm-up
