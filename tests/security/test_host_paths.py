"""PR texts and reports carry repo-relative paths only: a run whose checks and diagnoses name this
machine's paths (the clone, temp dirs, the checkpoint, the home dir) yields a PR series, PR.md and
report with none of them. A real run dir with real git commits (tests/tools/run_fixture.py)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.tools.run_fixture import make_run
from tools.host_paths import strip_host_paths
from tools.pr import build_pr
from tools.report import RunView, render_markdown
from tools.report_html import render_html


def _with_host_paths(run: Path, model: Path) -> None:
    """What a real run records: absolute paths in compiler output, check commands and stage details."""
    state = json.loads((run / "state.json").read_text())
    repo = state["repo_dir"]
    for outcome in state["outcomes"]:
        outcome["checks"][0]["cmd"] = f"hipcc -DUSE_ROCM -c {repo}/csrc/k.cu -o /tmp/rocport-unit-x1/k.o"
        outcome["checks"][0]["detail"] = f"{repo}/csrc/k.cu compiles"
    for failure in state["known_failures"].values():
        failure["excerpt"] = f"{repo}/csrc/k.cu:1:10: fatal error: 'cuda_bf16.h' file not found"
        failure["message"] = f"In file included from {repo}/csrc/k.cu:1: not found"
    state["stages"]["serve"]["detail"] = f"log: {run}/logs/server.log; home {Path.home()}/.cache/x"
    state["bench"]["command"] = f"python -m tinyserve --model-path {model} --port 30000"
    (run / "state.json").write_text(json.dumps(state))
    (run / "job.yaml").write_text(f"framework: {{profile: tinyserve}}\nmodel: {{path: {model}}}\n")


def test_pr_series_pr_md_and_reports_name_no_host_path(tmp_path):
    run = make_run(tmp_path / "home")
    model = tmp_path / "ckpt" / "glm"
    _with_host_paths(run, model)
    view = RunView.load(run)
    pr = build_pr(view)
    texts = {
        "PR.md": pr.description.read_text(),
        "report.md": render_markdown(view),
        "report.html": render_html(view),
        **{p.name: p.read_text() for p in pr.patches},
    }
    for name, text in texts.items():
        for host in (str(tmp_path), "/tmp/rocport-unit", str(Path.home()) + "/"):
            assert host not in text, (name, host)
    assert "csrc/k.cu:1:10: fatal error" in texts["PR.md"]  # repo-relative, still useful
    assert "$MODEL_PATH" in texts["PR.md"] and "$RUN/logs/server.log" in texts["report.md"]
    assert "hipcc -DUSE_ROCM -c csrc/k.cu -o $TMPDIR/k.o" in pr.patches[0].read_text()


def test_strip_host_paths_keeps_what_is_not_a_host_path():
    text = "see https://example.com/tmp/x and /usr/include/hip/hip_runtime.h and ./tmp/y"
    assert strip_host_paths(text, repo="/work/repo") == text
    assert (
        strip_host_paths("/work/repo/csrc/a.cu:3: error; cd /work/repo", repo="/work/repo")
        == "csrc/a.cu:3: error; cd ."
    )
