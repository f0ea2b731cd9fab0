"""Run reports from a real run directory: markdown content and an HTML page checked in Chromium."""
import pytest

from tools.report import ReportError, RunView, render_markdown
from tools.report_html import render_html
from tests.browser import render
from tests.tools.run_fixture import make_run


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
