"""A loopback port on the host for a server inside a container that has no network.

Builds run with `--network none`, and the model server shares that container, so no `-p` mapping
or host networking reaches it. A relay inside the container listens on a unix socket in a folder
bind-mounted from the host and forwards each connection to the server's 127.0.0.1:PORT; on the host,
127.0.0.1:PORT forwards to that socket. The benchmark sees an ordinary loopback port, and the
container still cannot open a single connection to the outside.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from pathlib import Path

# Runs inside the container (stdlib only): unix socket -> 127.0.0.1:PORT, a thread pair per connection.
RELAY_IN_CONTAINER = r"""
import os, socket, sys, threading
path, port = sys.argv[1], int(sys.argv[2])
def pipe(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass
def handle(conn):
    try:
        upstream = socket.create_connection(("127.0.0.1", port), timeout=5)
        upstream.settimeout(None)
    except OSError:
        conn.close()
        return
    threading.Thread(target=pipe, args=(conn, upstream), daemon=True).start()
    pipe(upstream, conn)
try:
    os.unlink(path)
except FileNotFoundError:
    pass
srv = socket.socket(socket.AF_UNIX)
srv.bind(path)
os.chmod(path, 0o666)
srv.listen(256)
while True:
    conn, _ = srv.accept()
    threading.Thread(target=handle, args=(conn,), daemon=True).start()
"""


def _pipe(src: socket.socket, dst: socket.socket) -> None:
    try:
        while data := src.recv(65536):
            dst.sendall(data)
    except OSError:
        pass  # the other side went away: the connection is over either way
    finally:
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)


class HostListener:
    """127.0.0.1:port on the host, each connection forwarded to the unix socket `sock_path`."""

    def __init__(self, port: int, sock_path: Path, host: str = "127.0.0.1"):
        self.port = port
        self.sock_path = sock_path
        self._server = socket.create_server((host, port), backlog=256)
        self._closed = False
        self._thread = threading.Thread(target=self._accept, name=f"relay-{port}", daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._server.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self._forward, args=(conn,), daemon=True).start()

    def _forward(self, conn: socket.socket) -> None:
        inner = socket.socket(socket.AF_UNIX)
        try:
            inner.connect(str(self.sock_path))
        except OSError:
            conn.close()  # the relay in the container is not up yet: the client retries
            inner.close()
            return
        threading.Thread(target=_pipe, args=(conn, inner), daemon=True).start()
        _pipe(inner, conn)
        conn.close()
        inner.close()

    def close(self) -> None:
        self._closed = True
        with contextlib.suppress(OSError):  # never connected, or already shut down
            self._server.shutdown(socket.SHUT_RDWR)
        self._server.close()
