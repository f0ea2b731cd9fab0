"""Orphan cleanup against a Docker daemon too slow to answer (a loaded machine): the command that
cleans up at its start goes on, and the orphan is left for the next start.

The daemon is a real HTTP server on a unix socket that speaks the few Docker API calls cleanup makes and
never answers the removal: a real daemon cannot be made slow on purpose."""

from __future__ import annotations

import json
import os
import socket
import socketserver
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import ClassVar

import docker

from sandboxes import cleanup_orphans
from sandboxes.orphans import LABEL_HOST, LABEL_OWNER, LABEL_SESSION

ORPHAN = "f" * 64


def _dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


class _SlowDaemon(BaseHTTPRequestHandler):
    labels: ClassVar[dict[str, str]] = {}
    removals = 0

    def do_GET(self) -> None:
        container = {"Id": ORPHAN, "Name": "/rocport-orphan", "Names": ["/rocport-orphan"]}
        container |= {"Labels": self.labels, "Config": {"Labels": self.labels}}
        if self.path.endswith("/version"):
            body: object = {"ApiVersion": "1.41", "Version": "20.10"}
        elif "/containers/json" in self.path:
            body = [container]
        else:
            body = container
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_DELETE(self) -> None:
        type(self).removals += 1
        threading.Event().wait(5)  # the removal never answers within the client's timeout

    def log_message(self, *args) -> None:
        pass


class _UnixHTTPServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


def test_a_removal_that_times_out_is_left_for_the_next_start(tmp_path: Path):
    path = tmp_path / "docker.sock"
    _SlowDaemon.labels = {LABEL_OWNER: str(_dead_pid()), LABEL_HOST: socket.gethostname(), LABEL_SESSION: "x"}
    server = _UnixHTTPServer(str(path), _SlowDaemon)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        client = docker.DockerClient(base_url=f"unix://{path}", version="1.41", timeout=1)
        removed = cleanup_orphans(client)
    finally:
        server.shutdown()
        server.server_close()
    assert _SlowDaemon.removals == 1  # it did try to remove the orphan
    assert removed == []  # and reported nothing removed, without raising


def _serve(path: Path) -> _UnixHTTPServer:
    server = _UnixHTTPServer(str(path), _SlowDaemon)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


_PROBE = (
    "import sys; from sandboxes.orphans import cleanup_orphans\n"
    "print(cleanup_orphans(), 'docker' in sys.modules, 'requests' in sys.modules)"
)


def test_a_start_with_no_orphan_asks_the_socket_once_and_never_loads_the_sdk(tmp_path: Path):
    """The common start: rocport's containers all have live owners. One raw request lists them; the
    Docker SDK (~0.13 s of CPU to import) is not loaded and nothing is removed. With a dead owner the
    SDK is loaded and the removal tried (the daemon here never answers it: nothing reported removed)."""
    path = tmp_path / "docker.sock"
    env = {**os.environ, "DOCKER_HOST": f"unix://{path}"}
    server = _serve(path)
    try:
        _SlowDaemon.removals = 0
        _SlowDaemon.labels = {
            LABEL_OWNER: str(os.getpid()),
            LABEL_HOST: socket.gethostname(),
            LABEL_SESSION: "x",
        }
        out = subprocess.run(
            [sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, timeout=60
        )
        assert out.stdout.split() == ["[]", "False", "False"], out.stderr
        assert _SlowDaemon.removals == 0
        _SlowDaemon.labels = {**_SlowDaemon.labels, LABEL_OWNER: str(_dead_pid())}
        out = subprocess.run(
            [sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, timeout=60
        )
        assert out.stdout.split() == ["[]", "True", "True"], out.stderr
        assert _SlowDaemon.removals == 1
    finally:
        server.shutdown()
        server.server_close()


def test_no_daemon_on_the_socket_is_no_orphan_and_no_error(tmp_path: Path):
    env = {**os.environ, "DOCKER_HOST": f"unix://{tmp_path}/absent.sock"}
    out = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.split() == ["[]", "False", "False"], out.stderr
