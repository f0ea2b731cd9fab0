"""A real smart-HTTP git server on 127.0.0.1 for push tests: git's own `git http-backend` (CGI) behind a
small threaded HTTP server that answers 401 unless the request carries HTTP Basic auth whose password
is the expected token (what GitHub accepts: `x-access-token:TOKEN`), like GitHub does for pushes."""

from __future__ import annotations

import base64
import subprocess
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


@dataclass
class GitHTTP:
    """The running server: its base URL, the repos root, and what it saw (path, Authorization)."""

    url: str
    root: Path
    token: str
    seen: list[tuple[str, str]] = field(default_factory=list)

    def bare(self, rel: str) -> Path:
        """An empty bare repo at ROOT/rel, reachable at URL/rel."""
        path = self.root / rel
        subprocess.run(["git", "init", "-q", "--bare", str(path)], check=True)
        return path


def _read_body(handler: BaseHTTPRequestHandler) -> bytes:
    if handler.headers.get("Transfer-Encoding", "").lower() == "chunked":
        chunks = []
        while True:
            size = int(handler.rfile.readline().split(b";")[0].strip(), 16)
            if size == 0:
                handler.rfile.readline()
                return b"".join(chunks)
            chunks.append(handler.rfile.read(size))
            handler.rfile.readline()
    return handler.rfile.read(int(handler.headers.get("Content-Length") or 0))


def _handler(server: GitHTTP):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _authorized(self) -> bool:
            auth = self.headers.get("Authorization", "")
            server.seen.append((self.path, auth))
            if not auth.startswith("Basic "):
                return False
            _, _, password = base64.b64decode(auth[6:]).decode().partition(":")
            return password == server.token

        def _cgi(self, method: str) -> None:
            if not self._authorized():
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="git"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            path, _, query = self.path.partition("?")
            body = _read_body(self) if method == "POST" else b""
            env = {
                "GIT_PROJECT_ROOT": str(server.root),
                "GIT_HTTP_EXPORT_ALL": "1",
                "PATH_INFO": path,
                "QUERY_STRING": query,
                "REQUEST_METHOD": method,
                "CONTENT_TYPE": self.headers.get("Content-Type", ""),
                "CONTENT_LENGTH": str(len(body)),
                "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
                "HTTP_GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
                "REMOTE_USER": "pusher",  # an authenticated user: http-backend allows receive-pack
                "REMOTE_ADDR": "127.0.0.1",
                "PATH": "/usr/bin:/bin",
            }
            out = subprocess.run(
                ["git", "http-backend"], check=False, input=body, capture_output=True, env=env
            ).stdout
            head, _, payload = out.partition(b"\r\n\r\n")
            status, headers = 200, []
            for line in head.decode().split("\r\n"):
                name, _, value = line.partition(":")
                if name.lower() == "status":
                    status = int(value.split()[0])
                elif name:
                    headers.append((name, value.strip()))
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def do_GET(self):
            self._cgi("GET")

        def do_POST(self):
            self._cgi("POST")

    return Handler


def serve_git(root: Path, token: str):
    """Start the server (a context manager's worth: returns (GitHTTP, stop))."""
    root.mkdir(parents=True, exist_ok=True)
    state = GitHTTP(url="", root=root, token=token)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return state, httpd.shutdown
