"""tools/serve: real server processes on 127.0.0.1 started, smoke-tested, diagnosed and stopped."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent.profiles import load_profile
from sandboxes.local import LocalSandbox
from tools.serve import (
    ServeError,
    launch_command,
    running_server,
    serve_check,
    serve_profile,
    smoke_completion,
)

# A tiny OpenAI-compatible server: /health, /v1/models, /v1/completions. MODE picks its behaviour:
# ok; crash (load_weights raises a KeyError on a checkpoint name); hang (binds, never healthy).
# It also starts a child process in its process group, whose pid it writes to CHILD_PID_FILE, so
# the test can prove nothing is left behind.
SERVER = r"""
import json, os, subprocess, sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODE, PORT, PIDFILE = sys.argv[1], int(sys.argv[2]), sys.argv[3]
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
open(PIDFILE, "w").write(str(child.pid))
print("loading checkpoint", flush=True)


def load_weights(params_dict, weights):
    for name, loaded_weight in weights:
        param = params_dict[name]
        param.append(loaded_weight)


if MODE == "crash":
    load_weights({"model.mtp.mlp.shared_expert.down_proj.weight": []},
                 [("model.layers.2.mlp.shared_experts.down_proj.weight", 0)])


class Handler(BaseHTTPRequestHandler):
    def _send(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if MODE == "hang":
            return self._send(503, {"status": "loading"})
        if self.path == "/health":
            return self._send(200, {})
        if self.path == "/v1/models":
            return self._send(200, {"object": "list", "data": [{"id": "tiny-glm", "object": "model"}]})
        self._send(404, {})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path != "/v1/completions" or body.get("model") != "tiny-glm":
            return self._send(404, {"error": "unknown model " + str(body.get("model"))})
        text = " Paris" * body["max_tokens"]
        self._send(200, {"object": "text_completion", "choices": [{"index": 0, "text": text}]})

    def log_message(self, *args):
        pass


print("ready", flush=True)
ThreadingHTTPServer(("127.0.0.1", PORT), Handler).serve_forever()
"""


@pytest.fixture
def server_repo(tmp_path):
    (tmp_path / "server.py").write_text(SERVER)
    return tmp_path


def _gone(pid: int) -> bool:
    """True when no live process has this pid (a zombie awaiting its reaper counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True
    return "State:\tZ" in state


def _template(mode: str, pidfile: Path) -> str:
    return f"{sys.executable} server.py {mode} {{port}} {pidfile}"


def _assert_no_leftover(pidfile: Path) -> None:
    child = int(pidfile.read_text())
    deadline = time.monotonic() + 5  # a KILLed process takes a moment to finish exiting
    while not _gone(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(child), f"the server's child {child} outlived the stop"


def test_healthy_server_answers_smoke_completion_and_is_stopped(server_repo, tmp_path):
    pidfile = tmp_path / "child.pid"
    with LocalSandbox(server_repo, logdir=tmp_path / "logs") as sandbox:
        result = serve_check(
            sandbox, _template("ok", pidfile), model_path="/models/tiny", ready_timeout=60, smoke_max_tokens=3
        )
    assert result.ok and result.ready and result.smoke_ok, result.reason
    assert result.smoke_text == " Paris Paris Paris"
    assert result.health_s is not None and result.health_s > 0
    assert "loading checkpoint" in Path(result.log_path).read_text()
    assert result.failures == []
    _assert_no_leftover(pidfile)


def test_running_server_stays_up_inside_the_block_for_a_benchmark(server_repo, tmp_path):
    pidfile = tmp_path / "child.pid"
    with LocalSandbox(server_repo) as sandbox:
        with running_server(sandbox, _template("ok", pidfile), model_path="/m", ready_timeout=60) as server:
            assert server.ok and server.model == "tiny-glm"
            port = int(server.base_url.rsplit(":", 1)[1])
            assert smoke_completion("127.0.0.1", port, server.model, "hi", max_tokens=2) == (
                True,
                " Paris Paris",
            )
        assert server.exit_code is not None and server.log_path
    _assert_no_leftover(pidfile)


def test_crashing_server_is_diagnosed_as_weight_name(server_repo, tmp_path):
    pidfile = tmp_path / "child.pid"
    with LocalSandbox(server_repo) as sandbox:
        result = serve_check(sandbox, _template("crash", pidfile), model_path="/m", ready_timeout=60)
    assert not result.ready and "exited" in result.reason
    assert result.exit_code not in (0, None)
    kinds = {f.kind: f for f in result.failures}
    assert "weight_name" in kinds, result.failures
    assert kinds["weight_name"].symbol == "model.layers.2.mlp.shared_experts.down_proj.weight"
    assert "KeyError" in result.log_excerpt
    _assert_no_leftover(pidfile)


def test_hanging_server_times_out_and_is_killed(server_repo, tmp_path):
    pidfile = tmp_path / "child.pid"
    with LocalSandbox(server_repo) as sandbox:
        result = serve_check(sandbox, _template("hang", pidfile), model_path="/m", ready_timeout=3)
    assert not result.ready and "did not answer /health or /v1/models" in result.reason
    assert result.failures and result.failures[0].kind == "unknown"
    assert "ready" in result.failures[0].message  # the raw log tail, for the report and the LLM
    _assert_no_leftover(pidfile)


def test_server_that_ignores_sigterm_is_killed(server_repo, tmp_path):
    (server_repo / "stubborn.py").write_text(
        "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint('up', flush=True)\n"
        "time.sleep(600)\n"
    )
    with LocalSandbox(server_repo) as sandbox:
        result = serve_check(
            sandbox,
            f"{sys.executable} stubborn.py {{port}}",
            model_path="/m",
            ready_timeout=2,
            stop_grace_s=1,
        )
    assert not result.ready and result.exit_code == -9  # TERM ignored, so KILL


def test_bad_template_is_one_line_error():
    with pytest.raises(ServeError, match="unknown or malformed placeholder"):
        launch_command("serve --model {model} --port {port}", model_path="/m", port=1)
    assert (
        launch_command(
            "s --m {model_path} --tp {tp} --dp {dp} --host {host} --port {port}",
            model_path="/m",
            port=8,
            tp=4,
            dp=2,
        )
        == "s --m /m --tp 4 --dp 2 --host 127.0.0.1 --port 8"
    )


def test_server_in_docker_with_host_network(server_repo, rocm_image):
    from sandboxes.docker import DockerSandbox

    pidfile = server_repo / "child.pid"  # the repo is mounted at the same path inside the container
    with DockerSandbox(rocm_image, server_repo, network=True) as sandbox:
        result = serve_check(
            sandbox, f"python3 server.py ok {{port}} {pidfile}", model_path="/m", ready_timeout=60
        )
        assert result.ok, (result.reason, result.log_excerpt)
        child = int(pidfile.read_text())
        assert not sandbox.run(
            f"kill -0 {child} 2>/dev/null && ! grep -q '^State:.Z' /proc/{child}/status"
        ).ok


@pytest.fixture
def tinyserve(tmp_path):
    """A copy of the eval fixture framework and a real MXFP4 checkpoint for it."""
    src = Path(__file__).resolve().parents[2] / "evals/frameworks/tinyserve"
    repo = tmp_path / "tinyserve"
    shutil.copytree(src, repo, ignore=shutil.ignore_patterns("__pycache__", "build"))
    ckpt = tmp_path / "ckpt"
    subprocess.run(
        [sys.executable, "-m", "tinyserve.make_checkpoint", "--out", str(ckpt), "--quant", "mxfp4"],
        cwd=repo,
        check=True,
        capture_output=True,
    )
    return repo, ckpt


def test_tinyserve_from_its_profile_serves_a_completion(tinyserve):
    repo, ckpt = tinyserve
    with LocalSandbox(repo) as sandbox:
        result = serve_profile(sandbox, load_profile("tinyserve"), model_path=str(ckpt), ready_timeout=120)
    assert result.ok, (result.reason, result.log_excerpt)
    assert "--model-path " + str(ckpt) in result.command


def test_tinyserve_with_mtp_name_fault_is_diagnosed(tinyserve):
    repo, ckpt = tinyserve
    model = repo / "tinyserve/models/glm_moe.py"
    text = model.read_text()
    model.write_text(text.replace('    ("mlp.shared_experts", "shared_experts"),\n', ""))
    assert model.read_text() != text, "fixture changed shape"
    with LocalSandbox(repo) as sandbox:
        result = serve_profile(sandbox, load_profile("tinyserve"), model_path=str(ckpt), ready_timeout=120)
    assert not result.ready
    names = [f for f in result.failures if f.kind == "weight_name"]
    assert names and "shared_experts" in names[0].symbol, result.failures
    assert names[0].file == "tinyserve/models/glm_moe.py"


def test_server_in_a_container_without_network_answers_on_a_published_loopback_port(server_repo, rocm_image):
    """No host networking: the container has no network at all, the host still reaches the server."""
    import urllib.request

    from sandboxes.docker import DockerSandbox

    with DockerSandbox(rocm_image, server_repo, network=False) as sandbox:
        assert sandbox.container.attrs["HostConfig"]["NetworkMode"] == "none"
        with running_server(
            sandbox, "python3 server.py ok {port} /dev/null", model_path="/m", ready_timeout=60
        ) as result:
            assert result.ok, (result.reason, result.log_excerpt)
            assert result.base_url.startswith("http://127.0.0.1:")
            with urllib.request.urlopen(result.base_url + "/health", timeout=5) as reply:
                assert reply.status == 200
        outward = sandbox.run(
            "python3 -c \"import socket; socket.create_connection(('1.1.1.1', 53), timeout=3)\""
        )
        assert not outward.ok and "unreachable" in (outward.stderr + outward.stdout).lower()
