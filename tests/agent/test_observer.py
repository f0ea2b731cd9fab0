"""The observer: every event in the run's events.jsonl; the JSON and rich sinks show what a user follows."""
from __future__ import annotations

import io
import json

from rich.console import Console

from agent.observer import JsonlSink, Observer, RichProgress
from agent.rundir import RunDir


def test_events_go_to_the_run_dir_and_every_sink(tmp_path):
    rundir = RunDir("r1", home=tmp_path)
    rundir.create("framework: {profile: x}\n")
    stream = io.StringIO()
    out = io.StringIO()
    progress = RichProgress(Console(file=out, width=200, force_terminal=False))
    observer = Observer(rundir, [JsonlSink(stream), progress])
    observer.emit("phase", phase="build", iteration=1)
    observer.emit("build_done", number=1, ok=False, failures=2, duration_s=3.2, log="logs/001-build-1.log",
                  counters={"builds": 1, "launches": 0, "tokens_in": 0, "tokens_out": 0})
    observer.emit("patch_kept", proposer="rule:headers", kind="cuda_header", file="csrc/a.cu", commit="abcdef1234567")
    observer.emit("patch_reverted", proposer="llm:m", kind="warp_size", file="csrc/b.cu", reason="nvcc broke")
    on_disk = [json.loads(line) for line in rundir.events.read_text().splitlines()]
    streamed = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [e["event"] for e in on_disk] == [e["event"] for e in streamed] == \
        ["phase", "build_done", "patch_kept", "patch_reverted"]
    assert all(e["run_id"] == "r1" and e["ts"] > 0 for e in on_disk)
    shown = out.getvalue()
    assert "build #1: 2 failing" in shown and "kept   rule:headers" in shown and "revert llm:m" in shown
    assert progress.status["kept"] == 1 and progress.status["reverted"] == 1 and progress.status["builds"] == 1
    assert "builds 1" in progress._line().plain and "[build] iter 1" in progress._line().plain
