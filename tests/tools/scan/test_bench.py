"""The scan benchmark runs end to end on a small tree and prints both timings and the ratio."""

from __future__ import annotations

import re

from evals.bench_scan import main


def test_bench_prints_grep_scan_and_ratio(capsys):
    main(["--kernels", "12", "--headers", "3", "--bindings", "2", "--python", "10", "--repeat", "1"])
    out = capsys.readouterr().out
    assert "tree: 28 files" in out
    assert re.search(r"grep -rE \(raw patterns\)\s+wall\s+[\d.]+ s", out)
    assert re.search(r"scan_report \(library\)\s+wall\s+[\d.]+ s.*\d+ findings\s+ratio [\d.]+x grep", out)
    assert re.search(r"rocport scan \(CLI, json\)\s+wall\s+[\d.]+ s", out)
