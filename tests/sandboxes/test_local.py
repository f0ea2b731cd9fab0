"""LocalSandbox: real subprocesses, process-group kills, truncation, background services."""

import socket
import sys
import time
from pathlib import Path

import pytest

from sandboxes import LocalSandbox, SandboxError, ServiceNotReady


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_exit_code_stdout_stderr_env(tmp_path):
    with LocalSandbox(tmp_path) as sb:
        r = sb.run('echo "$GREETING"; echo oops >&2; exit 3', env={"GREETING": "hello"})
    assert (r.returncode, r.stdout, r.stderr, r.ok) == (3, "hello\n", "oops\n", False)


def test_timeout_kills_grandchildren_and_keeps_output(tmp_path):
    marker = tmp_path / "still-alive"
    with LocalSandbox(tmp_path) as sb:
        r = sb.run(f"echo started; (sleep 3; touch {marker}) & sleep 60", timeout=1)
        time.sleep(3.5)
    assert r.timed_out and r.returncode == 124
    assert r.stdout == "started\n"
    assert not marker.exists(), "the grandchild survived the timeout"


def test_huge_output_keeps_both_ends(tmp_path):
    with LocalSandbox(tmp_path) as sb:
        r = sb.run("echo FIRST; head -c 8000000 /dev/zero | tr '\\0' x; echo; echo LAST")
    assert r.stdout.startswith("FIRST\n") and r.stdout.rstrip().endswith("LAST")
    assert "cut by rocport" in r.stdout and len(r.stdout) < 2_100_000


def test_background_service_reachable_then_stopped(tmp_path):
    port = _free_port()
    (tmp_path / "index.html").write_text("ok")
    sb = LocalSandbox(tmp_path)
    svc = sb.start(
        f"{sys.executable} -m http.server {port} --bind 127.0.0.1",
        name="web",
        port=port,
        health_path="/index.html",
        ready_timeout=20,
    )
    with socket.create_connection(("127.0.0.1", port), timeout=2):
        pass
    sb.close()
    assert not svc.alive()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=1)


def test_service_that_dies_reports_its_log(tmp_path):
    with LocalSandbox(tmp_path) as sb, pytest.raises(ServiceNotReady) as info:
        sb.start(
            "bash -c 'echo boom-before-listen; exit 1'", name="crash", port=_free_port(), ready_timeout=10
        )
    assert "exited before it became ready" in str(info.value)
    assert "boom-before-listen" in info.value.log


def test_command_not_found_is_a_result(tmp_path):
    with LocalSandbox(tmp_path) as sb:
        r = sb.run("definitely-not-a-command-xyz")
    assert r.returncode == 127 and "not found" in r.stderr


def test_missing_workdir_is_a_one_line_error(tmp_path):
    with pytest.raises(SandboxError, match="does not exist"):
        LocalSandbox(tmp_path / "nope")


def test_credentials_never_reach_the_sandbox(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-should-not-leak")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-should-not-leak")
    monkeypatch.setenv("HIP_VISIBLE_DEVICES", "0")
    with LocalSandbox(tmp_path) as sb:
        out = sb.run("env").stdout
    assert "should-not-leak" not in out and "HIP_VISIBLE_DEVICES=0" in out


def test_timeout_kills_what_escaped_with_setsid(tmp_path):
    marker = tmp_path / "escapee-alive"
    with LocalSandbox(tmp_path) as sb:
        r = sb.run(f"setsid bash -c 'sleep 3; touch {marker}' & sleep 60", timeout=1)
        time.sleep(3.5)
    assert r.timed_out
    assert not marker.exists(), "a setsid escapee survived the timeout"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ")[1][0] != "Z"
    except OSError:
        return False


def test_server_of_a_killed_owner_stops_by_itself(tmp_path):
    """kill -9 of the process that owns the sandbox: its watchdog ends the service, setsid children included."""
    import os
    import signal
    import subprocess
    import textwrap

    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
        import time
        from sandboxes import LocalSandbox
        sb = LocalSandbox({str(tmp_path)!r})
        svc = sb.start("bash -c 'setsid sleep 601 & echo $! > escaped; sleep 600'", name="server")
        time.sleep(0.5)
        print(svc.pid, flush=True)
        time.sleep(600)
    """),
        ],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    server = int(child.stdout.readline())
    escaped = int((tmp_path / "escaped").read_text())
    assert _alive(server) and _alive(escaped)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and (_alive(server) or _alive(escaped)):
        time.sleep(0.2)
    assert not _alive(server) and not _alive(escaped), "the killed owner's server is still running"


def test_a_host_hipcc_build_leaves_nothing_in_the_shared_temp_folder(hipcc, tmp_path):
    """ROCm 5.2's hipcc leaves two empty folders in $TMPDIR per compile; the sandbox's commands get a
    temporary folder of their own, removed with it, so a day of builds does not fill /tmp."""
    import tempfile
    import uuid

    stem = f"leakcheck_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{stem}.hip").write_text(
        "#include <hip/hip_runtime.h>\n__global__ void k(float* x) { x[threadIdx.x] = 1.0f; }\n"
    )
    with LocalSandbox(tmp_path, env={"HIP_PLATFORM": "amd"}) as sb:
        r = sb.run(f"hipcc --offload-arch=gfx90a -c {stem}.hip -o k.o", timeout=300)
        assert r.ok, r.output
        scratch = sb.base_env["TMPDIR"]
        assert Path(scratch).is_dir() and not Path(scratch).is_relative_to(tmp_path)
    assert (tmp_path / "k.o").exists()
    assert not list(Path(tempfile.gettempdir()).glob(f"{stem}*")), "hipcc's leftovers in the shared /tmp"
    assert not Path(scratch).exists()
