"""Data parallelism: N worker server processes behind one HTTP router, like sglang's --dp.

Each worker is a full `launch_server --dp 1` process (its own model copy, scheduler, device and
prefix cache). The router sends a request to the worker that owns its prompt's first tokens, so
requests sharing a prefix meet the cache that holds it (the affinity half of sglang's cache-aware
routing); a prefix seen for the first time goes to the worker owning the fewest prefixes, so the
load stays even. Answers are relayed as they come, chunk by chunk.
"""
from __future__ import annotations

import http.client
import json
import logging
import subprocess
import sys
import threading
import time
from collections import OrderedDict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tinyserve.server import Server

log = logging.getLogger("tinyserve.router")
AFFINITY_TOKENS = 16
MAX_PREFIXES = 100_000


def start_workers(argv: list[str], dp: int, host: str, ports: list[int]) -> list[subprocess.Popen]:
    """Start `dp` single-replica servers with the router's own arguments on their own ports."""
    procs = []
    for rank, port in enumerate(ports):
        cmd = [sys.executable, "-m", "tinyserve.launch_server", *argv, "--dp", "1", "--port", str(port),
               "--host", host, "--dp-rank", str(rank)]
        procs.append(subprocess.Popen(cmd))
    return procs


def wait_workers(procs: list[subprocess.Popen], host: str, ports: list[int], timeout: float = 120) -> None:
    """Return once every worker answers /health; raise if one exits or the timeout passes."""
    deadline = time.monotonic() + timeout
    pending = set(range(len(ports)))
    while pending:
        for rank in sorted(pending):
            if procs[rank].poll() is not None:
                raise RuntimeError(f"data-parallel worker {rank} exited with code {procs[rank].returncode}")
            if _healthy(host, ports[rank]):
                pending.discard(rank)
        if time.monotonic() > deadline:
            raise RuntimeError(f"data-parallel workers {sorted(pending)} did not become healthy in {timeout:.0f}s")
        time.sleep(0.2)


def _healthy(host: str, port: int) -> bool:
    conn = http.client.HTTPConnection(host, port, timeout=2)
    try:
        conn.request("GET", "/health")
        return conn.getresponse().status == 200
    except OSError:
        return False
    finally:
        conn.close()


class PrefixRouter:
    """Which worker owns which prompt prefix; new prefixes go to the worker owning the fewest."""

    def __init__(self, workers: int):
        self.owned = [0] * workers
        self.owner: OrderedDict[str, int] = OrderedDict()
        self._lock = threading.Lock()

    def pick(self, body: bytes) -> int:
        key = prefix_key(body)
        with self._lock:
            if key in self.owner:
                self.owner.move_to_end(key)
                return self.owner[key]
            rank = min(range(len(self.owned)), key=self.owned.__getitem__)
            self.owner[key] = rank
            self.owned[rank] += 1
            if len(self.owner) > MAX_PREFIXES:  # forget the least recently seen prefix
                _, old = self.owner.popitem(last=False)
                self.owned[old] -= 1
            return rank


def prefix_key(body: bytes) -> str:
    """The prompt's first AFFINITY_TOKENS tokens (or characters, or the chat messages)."""
    try:
        request = json.loads(body or b"null")
    except json.JSONDecodeError:
        return ""  # the worker answers 400 with the parse error
    prompt = request.get("prompt") if isinstance(request, dict) else None
    if prompt is None and isinstance(request, dict):
        prompt = json.dumps(request.get("messages"))
    return json.dumps(prompt[:AFFINITY_TOKENS] if isinstance(prompt, (list, str)) else prompt)


class RouterHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "tinyserve-router"
    host: str
    ports: list[int]
    routes: PrefixRouter

    def log_message(self, fmt: str, *args) -> None:
        log.debug("%s %s", self.address_string(), fmt % args)

    def do_GET(self) -> None:
        if self.path == "/health" and not all(_healthy(self.host, p) for p in self.ports):
            self._relay_error(503, "a data-parallel worker is down")
            return
        self._forward("GET", b"", 0)

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._forward("POST", body, self.routes.pick(body))

    def _forward(self, method: str, body: bytes, rank: int) -> None:
        conn = http.client.HTTPConnection(self.host, self.ports[rank], timeout=3600)
        try:
            conn.request(method, self.path, body=body or None, headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            self.send_response(resp.status)
            self.send_header("Content-Type", resp.getheader("Content-Type", "application/json"))
            if resp.getheader("Transfer-Encoding", "").lower() == "chunked":
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                while piece := resp.read1(65536):
                    self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
            else:
                data = resp.read()
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
        except OSError as exc:
            self._relay_error(502, f"data-parallel worker {rank} failed: {exc}")
        finally:
            conn.close()

    def _relay_error(self, status: int, message: str) -> None:
        data = json.dumps({"object": "error", "message": message, "code": status}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def make_router(host: str, port: int, worker_host: str, worker_ports: list[int]) -> ThreadingHTTPServer:
    handler = type("BoundRouter", (RouterHandler,), {"host": worker_host, "ports": worker_ports,
                                                     "routes": PrefixRouter(len(worker_ports))})
    return Server((host, port), handler)
