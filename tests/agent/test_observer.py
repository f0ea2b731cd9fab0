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
    progress = RichProgress(Console(file=out, width=200, force_terminal=False), events=True)
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
    assert "builds 1" in progress._line().plain and "[build] 0s  iter 1" in progress._line().plain


def test_panel_shows_the_current_command_and_the_last_log_line_and_keeps_ticking(tmp_path):
    rundir = RunDir("r2", home=tmp_path)
    rundir.create("framework: {profile: x}\n")
    screen = io.StringIO()
    progress = RichProgress(Console(file=screen, width=120, force_terminal=True))
    progress.logs = rundir.logs
    observer = Observer(rundir, [progress])
    observer.emit("phase", phase="build", iteration=0)
    observer.emit("build_started", number=1, cmd="python3 build.py --backend rocm --arch gfx950")
    (rundir.logs / ".run-1.out").write_text("compiling csrc/activation.cu\n[3/7] linking libtinyserve.so\n")
    console = Console(file=io.StringIO(), width=120, force_terminal=True)
    with console.capture() as first:
        console.print(progress)
    progress.started -= 61  # a minute later, as the clock sees it
    progress.phase_started -= 61
    progress._log_read = 0
    with console.capture() as second:
        console.print(progress)
    assert "$ python3 build.py --backend rocm --arch gfx950" in first.get()
    assert "> [3/7] linking libtinyserve.so" in first.get()
    assert "[build] 0s" in first.get() and "[build] 1m01s" in second.get()


def test_without_a_terminal_a_heartbeat_line_says_the_run_is_alive(tmp_path):
    import time

    log = io.StringIO()
    progress = RichProgress(Console(file=log, width=80, force_terminal=False), heartbeat_s=0.2, title="demo")
    with progress:
        progress({"event": "phase", "phase": "build", "iteration": 0})
        progress({"event": "command", "cmd": "python3 build.py --backend rocm --arch gfx950 --and-a-long-tail " * 3})
        time.sleep(0.7)
    beats = [ln for ln in log.getvalue().splitlines() if ln.startswith("… demo [build]")]
    assert len(beats) >= 2
    assert all(ln.endswith("--and-a-long-tail") for ln in beats)  # never cut mid-command in a log


def test_a_sweep_heartbeat_carries_its_phase_and_clocks_without_the_port_counters():
    import time

    log = io.StringIO()
    progress = RichProgress(Console(file=log, width=80, force_terminal=False), heartbeat_s=0.2, title="sweep nightly",
                            counters=False)
    with progress:
        progress({"event": "phase", "phase": "1/4 cells"})
        time.sleep(0.5)
    beats = log.getvalue().splitlines()
    assert beats and all(ln.startswith("… sweep nightly [1/4 cells] 0s  total 0s") for ln in beats)
