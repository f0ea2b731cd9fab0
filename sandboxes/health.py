"""Waiting for a background service: port open, then an HTTP health path answering 200."""

from __future__ import annotations

import http.client
import socket
import time
from collections.abc import Callable


def port_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def http_ok(host: str, port: int, path: str) -> bool:
    try:
        conn = http.client.HTTPConnection(host, port, timeout=2)
        conn.request("GET", path)
        ok = conn.getresponse().status == 200
        conn.close()
        return ok
    except (OSError, http.client.HTTPException):
        return False


def wait_ready(
    port: int,
    *,
    health_path: str | None,
    timeout: float,
    alive: Callable[[], bool],
    host: str = "127.0.0.1",
    interval: float = 0.1,
) -> str | None:
    """Poll until the service answers. Returns None when ready, else why it is not."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive():
            return "exited before it became ready"
        if port_open(host, port) and (health_path is None or http_ok(host, port, health_path)):
            return None
        time.sleep(interval)
    what = f"http://{host}:{port}{health_path or ''}"
    return f"not ready after {timeout:.0f}s ({what} did not answer)"
