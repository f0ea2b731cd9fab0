"""The observer: every event in the run's events.jsonl; the JSON and rich sinks show what a user follows."""

from __future__ import annotations

import io
import json

from rich.console import Console

from agent.loop.observer import JsonlSink, Observer, RichProgress
from agent.loop.progress import last_log_line
from agent.loop.rundir import RunDir


def test_events_go_to_the_run_dir_and_every_sink(tmp_path):
    rundir = RunDir("r1", home=tmp_path)
    rundir.create("framework: {profile: x}\n")
    stream = io.StringIO()
    out = io.StringIO()
    progress = RichProgress(Console(file=out, width=200, force_terminal=False), events=True)
    observer = Observer(rundir, [JsonlSink(stream), progress])
    observer.emit("phase", phase="build", iteration=1)
    observer.emit(
        "build_done",
        number=1,
        ok=False,
        failures=2,
        duration_s=3.2,
        log="logs/001-build-1.log",
        counters={"builds": 1, "launches": 0, "tokens_in": 0, "tokens_out": 0},
    )
    observer.emit(
        "patch_kept", proposer="rule:headers", kind="cuda_header", file="csrc/a.cu", commit="abcdef1234567"
    )
    observer.emit("patch_reverted", proposer="llm:m", kind="warp_size", file="csrc/b.cu", reason="nvcc broke")
    on_disk = [json.loads(line) for line in rundir.events.read_text().splitlines()]
    streamed = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert (
        [e["event"] for e in on_disk]
        == [e["event"] for e in streamed]
        == ["phase", "build_done", "patch_kept", "patch_reverted"]
    )
    assert all(e["run_id"] == "r1" and e["ts"] > 0 for e in on_disk)
    shown = out.getvalue()
    assert "build #1: 2 failing" in shown and "kept   rule:headers" in shown and "revert llm:m" in shown
    assert (
        progress.status["kept"] == 1 and progress.status["reverted"] == 1 and progress.status["builds"] == 1
    )
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
        progress(
            {
                "event": "command",
                "cmd": "python3 build.py --backend rocm --arch gfx950 --and-a-long-tail " * 3,
            }
        )
        time.sleep(0.7)
    beats = [ln for ln in log.getvalue().splitlines() if ln.startswith("… demo [build]")]
    assert len(beats) >= 2
    assert all(ln.endswith("--and-a-long-tail") for ln in beats)  # never cut mid-command in a log


def test_a_sweep_heartbeat_carries_its_phase_and_clocks_without_the_port_counters():
    import time

    log = io.StringIO()
    progress = RichProgress(
        Console(file=log, width=80, force_terminal=False),
        heartbeat_s=0.2,
        title="sweep nightly",
        counters=False,
    )
    with progress:
        progress({"event": "phase", "phase": "1/4 cells"})
        time.sleep(0.5)
    beats = log.getvalue().splitlines()
    assert beats and all(ln.startswith("… sweep nightly [1/4 cells] 0s  total 0s") for ln in beats)


def test_a_local_sandbox_command_streams_its_lines_into_the_panel_while_it_runs(tmp_path):
    """sandbox.backend: local writes a running command's output into the run's logs dir (as Docker
    does), so the panel's `>` line follows the build instead of freezing until it ends."""
    import threading
    import time

    from sandboxes import LocalSandbox

    rundir = RunDir("r4", home=tmp_path)
    rundir.create("framework: {profile: x}\n")
    progress = RichProgress(Console(file=io.StringIO(), width=120, force_terminal=True))
    progress.logs = rundir.logs
    console = Console(file=io.StringIO(), width=120, force_terminal=True, color_system=None)
    seen: list[str] = []
    with LocalSandbox(rundir.repo.parent, logdir=rundir.logs) as sb:
        script = "for i in 1 2 3 4; do echo compiling unit $i; sleep 0.7; done; echo linking >&2"
        worker = threading.Thread(target=lambda: sb.run(script, timeout=60))
        worker.start()
        while worker.is_alive():
            progress._log_read = 0  # the panel reads the disk twice a second; here on every frame
            with console.capture() as frame:
                console.print(progress)
            line = next((ln.strip() for ln in frame.get().splitlines() if ln.strip().startswith(">")), "")
            if line and line not in seen:
                seen.append(line)
            time.sleep(0.2)
        worker.join()
    assert seen[:3] == ["> compiling unit 1", "> compiling unit 2", "> compiling unit 3"], seen
    assert not list(rundir.logs.glob(".run-*")), "a finished command's live output is cleaned up"


def test_a_command_log_is_never_overwritten_while_live_files_come_and_go_in_logs(tmp_path):
    from sandboxes.base import CommandResult

    rundir = RunDir("r5", home=tmp_path)
    rundir.create("framework: {profile: x}\n")
    live = rundir.logs / ".heartbeat-abc"
    live.write_text("")  # a sandbox's heartbeat (or a running command's .run-* output) in logs/
    first = rundir.log_command("build-1", CommandResult("make", 1, "first build\n", "", 1.0))
    live.unlink()
    second = rundir.log_command("build-2", CommandResult("make", 0, "second build\n", "", 1.0))
    assert first != second and "first build" in first.read_text() and "second build" in second.read_text()
    assert (first.name[:4], second.name[:4]) == ("001-", "002-")
    rundir.log_command("quiet", CommandResult("true", 0, "", "", 0.1))
    assert (
        last_log_line(rundir.logs) == ""
    )  # a command that printed nothing shows no line of rocport's header
