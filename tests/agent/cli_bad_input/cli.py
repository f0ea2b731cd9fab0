"""Running the real `rocport` entry point in a temp ROCPORT_HOME and checking its one error line."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

ROCPORT = [sys.executable, "-m", "agent.cli"]
REPO_ROOT = Path(__file__).resolve().parents[3]


def rocport(
    home: Path, *args: str, cwd: Path | None = None, timeout: int = 300, extra_env: dict | None = None
) -> subprocess.CompletedProcess:
    env = {**os.environ, "ROCPORT_HOME": str(home), "COLUMNS": "200"}
    for name in ("OPENAI_BASE_URL", "GITHUB_TOKEN"):
        env.pop(name, None)
    env.update(extra_env or {})
    env["PYTHONPATH"] = str(REPO_ROOT)
    return subprocess.run(
        [*ROCPORT, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd or home.parent,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def one_line_error(result: subprocess.CompletedProcess, *needles: str, code: int = 2) -> str:
    """The run ended with exactly one `rocport: error:` line containing every needle (case-insensitive)."""
    out = result.stdout + result.stderr
    assert "Traceback" not in out, out[-3000:]
    assert result.returncode == code, out[-3000:]
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("rocport: error: "), result.stderr
    for needle in needles:
        assert needle.lower() in lines[0].lower(), lines[0]
    return lines[0]


def closed_port() -> int:
    """A 127.0.0.1 port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
