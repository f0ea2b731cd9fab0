"""`rocport diagnose` and `rocport scan` start without asking the Docker daemon anything.

DOCKER_HOST points at a real unix socket this test listens on; every other command's start-up
(orphan-container cleanup) connects to it, these two must not. Speed is measured by
evals/bench_cli_start.py, not asserted here.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from pathlib import Path


class _Listener:
    """A unix socket that counts the connections made to it."""

    def __init__(self, path: Path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(str(path))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            conn.close()  # no answer: a client that waits for one fails fast

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sock.close()


def _rocport(args: list[str], docker_host: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "DOCKER_HOST": docker_host, "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "agent.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
        check=False,
    )


def test_diagnose_and_scan_never_contact_docker_but_other_commands_do(tmp_path):
    listener = _Listener(tmp_path / "docker.sock")
    log = tmp_path / "build.log"
    log.write_text("csrc/x.cu:3:10: fatal error: 'cuda_bf16.h' file not found\n")
    repo = tmp_path / "repo"
    (repo / "csrc").mkdir(parents=True)
    (repo / "csrc" / "x.cu").write_text("#include <cuda_bf16.h>\n")
    host = f"unix://{tmp_path / 'docker.sock'}"
    try:
        diagnosed = _rocport(["diagnose", str(log)], host, tmp_path)
        scanned = _rocport(["scan", str(repo)], host, tmp_path)
        quiet = listener.connections
        _rocport(["runs"], host, tmp_path)  # any other command cleans up orphan containers first
        loud = listener.connections
    finally:
        listener.close()
    assert diagnosed.returncode == 0 and "cuda_header" in diagnosed.stdout, diagnosed.stderr
    assert scanned.returncode in (0, 1) and "cuda_bf16.h" in scanned.stdout, scanned.stderr
    assert quiet == 0
    assert loud >= 1
