"""Run reports from a real run directory: markdown content and an HTML page checked in Chromium."""

import pytest

from tests.browser import render
from tests.tools.run_fixture import make_run
from tools.report import ReportError, RunView, render_markdown
from tools.report_html import render_html


def test_markdown_tells_the_story(tmp_path):
    md = render_markdown(RunView.load(make_run(tmp_path)))
    assert "**Status:** green" in md
    assert "| build | 20.0 | 10.0 |" in md  # timeline from the phase events
    assert "| `cuda_header:csrc/k.cu:cuda_bf16.h` | fixed | rule:headers |" in md
    assert "reverted: nvcc no longer compiles csrc/k.cu" in md
    assert "| LLM cost | unknown (no pricing configured) |" in md
    assert "| TTFT | 80.50 | 80.10 | 82.00 | 83.00 | 85.20 |" in md
    assert "| output tok/s | 62.40 |" in md


def test_html_renders_tables_and_plots_in_chromium(tmp_path):
    view = RunView.load(make_run(tmp_path))
    page = tmp_path / "report.html"
    page.write_text(render_html(view))
    dom, errors, shot = render(page, tmp_path)
    assert errors == []
    for table in ("timeline", "failures", "patches", "costs", "latency", "throughput"):
        assert f'id="{table}"' in dom
    assert 'id="latency-plot"' in dom and dom.count("<rect") >= 20 and "62.40" in dom
    assert shot.stat().st_size > 10_000


def test_a_run_without_state_is_a_one_line_error(tmp_path):
    (tmp_path / "runs" / "r1").mkdir(parents=True)
    with pytest.raises(ReportError, match="resume it with `rocport port --resume r1`"):
        RunView.load(tmp_path / "runs" / "r1")


def test_html_header_badge_timeline_diffs_and_axes(tmp_path):
    run = make_run(tmp_path)
    (run / "job.yaml").write_text(
        "framework: {profile: tinyserve, ref: main}\nmodel: {path: /ckpt/tiny-moe}\n"
        "target: {arch: gfx950, image: rocport/rocm-build:6.4}\n"
    )
    page = tmp_path / "report.html"
    page.write_text(render_html(RunView.load(run)))
    dom, errors, shot = render(page, tmp_path)
    assert errors == []
    assert 'id="status-badge">green<' in dom
    assert (
        "<td>model</td><td>tiny-moe</td>" in dom
        and "/ckpt" not in dom
        and "<td>target</td><td>gfx950</td>" in dom
    )
    assert "<td>image</td><td>rocport/rocm-build:6.4</td>" in dom
    assert 'id="timeline-chart"' in dom and "seconds since the run started" in dom
    # the kept patches' diffs, inline, coloured
    assert (
        '<span class="add">+#ifdef USE_ROCM</span>' in dom
        and '<span class="add">+#include &lt;hip/hip_bf16.h&gt;' in dom
    )
    assert '<span class="hunk">@@ -1,2 +1,6 @@</span>' in dom
    # latency: one panel per metric, each on its own 0-based ms axis with round ticks
    latency = dom.split('id="latency-plot"')[1].split("</svg>")[0]
    assert (
        all(f">{m}</text>" in latency for m in ("TTFT", "TPOT", "ITL", "E2E"))
        and latency.count(">ms</text>") == 4
    )
    assert ">0</text>" in latency and ">100</text>" in latency  # TTFT's 85 ms tops out at a round 100
    assert shot.stat().st_size > 10_000
