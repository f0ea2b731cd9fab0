"""One keep-alive connection: its socket, kernel-stamped reads, and HTTP/1.1 response framing.

Correctness lives in the general path (any split of the head, chunk framing and events across
reads; the events themselves are tools/bench/sse.py's). Two fast paths cover what servers send in
steady state and keep the client's CPU per chunk low: a read that is exactly one chunk holding one
event (here), and reads whose events all carry per-chunk usage (one regex pass per read, no json;
in sse.py).
"""

from __future__ import annotations

import asyncio
import socket
import struct
import time
from time import perf_counter
from typing import TYPE_CHECKING

from tools.bench.sse import CT_VALUES, NO_REQUEST, READ_SIZE, SSEEvents

if TYPE_CHECKING:
    from tools.bench.client import ConnectionPool, RequestRecord

_MAX_HEAD = 64 * 1024
_FIRST_READ_SIZE = 256
"""Until the first token: a read is stamped with its last packet, so a small read keeps TTFT exact."""
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)  # Linux; Python does not export it
_TIMESPEC = struct.Struct("qq")
_MAX_ERROR_BODY = 2048


class StreamConnection(SSEEvents):
    """One keep-alive connection; serves one request at a time.

    It reads its socket itself (recvmsg with SO_TIMESTAMPNS): each read is stamped with the kernel's
    receive time of its last packet, so a client that is descheduled for a while on a busy machine
    still records when the bytes really arrived.
    """

    fut: asyncio.Future[bool]  # these five are set per request by begin()
    may_retry: bool
    got_bytes: bool
    body_done: bool
    timer: asyncio.TimerHandle

    def __init__(self, pool: ConnectionPool, sock: socket.socket, loop: asyncio.AbstractEventLoop):
        self.pool, self.sock, self.loop = pool, sock, loop
        self.closed = False
        self.rec = None
        self.clean = False
        self.sending = False
        self.offset = time.time() - perf_counter()
        self.read_size = READ_SIZE
        self._recvmsg = sock.recvmsg
        loop.add_reader(sock.fileno(), self._readable)

    def _readable(self) -> None:
        try:
            data, anc, _flags, _addr = self._recvmsg(self.read_size, 64)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._lost(exc)
            return
        if not data:
            self._lost(None)
            return
        if anc:
            sec, ns = _TIMESPEC.unpack_from(anc[0][2])
            self.data_received(data, sec + ns * 1e-9 - self.offset)
        else:
            self.data_received(data, perf_counter())

    def _lost(self, exc: Exception | None) -> None:
        self.close()
        if self.rec is None:
            return
        if not self.got_bytes and self.may_retry:
            # Typically a keep-alive connection the server closed while idle: resend once.
            self._settle(retry=True)
        elif self.body_mode == "close" and not self.in_head:
            self._end_body(perf_counter())
        else:
            why = f": {exc}" if exc else ""
            self._fail(f"connection closed before the response ended{why}")

    async def send(self, data: bytes) -> None:
        """Write a request; a failed write is a lost connection (recorded, never raised)."""
        self.sending = True
        try:
            await self.loop.sock_sendall(self.sock, data)
        except OSError as exc:
            self._lost(exc)
        finally:
            self.sending = False

    def data_received(self, data: bytes, now: float) -> None:
        if self.clean:
            # Fast path: exactly one chunk "<hex>\r\n<one SSE event>\r\n" with per-chunk usage.
            n = len(data)
            i = data.find(b"\r\n")
            if i > 0 and data.endswith(b"\n\n\r\n") and data.find(b"\n\n", i + 2) == n - 4:
                try:
                    size = int(data[:i], 16)
                except ValueError:
                    size = -1
                m = CT_VALUES.search(data, i + 2) if size == n - i - 4 else None
                if m is not None:
                    c = int(m.group(1))
                    self.last_block = data
                    if c > self.cum:
                        self._arrived(now, 1, c - self.cum)
                        self.cum = c
                    return
        self._general(data, now)

    def _general(self, data: bytes, now: float) -> None:
        if self.rec is None:
            return
        self.got_bytes = True
        if self.in_head:
            body = self._head(data)
            if body is None:
                return
            data = body
        mode = self.body_mode
        if mode == "chunked":
            payload = self._dechunk(data)
        elif mode == "length":
            payload = data[: self.left]
            self.left -= len(payload)
            if self.left <= 0:
                self.body_done = True
        else:
            payload = data
        if payload and self.rec is not None:
            if self.status == 200:
                self._sse(payload, now)
            elif len(self.err_body) < _MAX_ERROR_BODY:
                self.err_body += payload
        if self.rec is None:
            return
        if self.body_done:
            self._end_body(now)
        else:
            self.clean = (
                mode == "chunked"
                and self.status == 200
                and not self.left
                and not self.crlf_left
                and not self.size_buf
                and not self.sse_buf
                and self.fast is True
            )

    # -- request lifecycle ------------------------------------------------------------------------
    def begin(self, rec: RequestRecord, fut: asyncio.Future[bool], timeout: float, may_retry: bool) -> None:
        """Attach the next request to this connection (its bytes are written by the caller)."""
        self.rec, self.fut, self.may_retry = rec, fut, may_retry
        self.got_bytes = self.clean = False
        self.in_head, self.head_buf = True, b""
        self.status, self.keep_alive = 0, True
        self.body_mode, self.left, self.crlf_left, self.size_buf = "close", 0, 0, b""
        self.body_done = False
        self.err_body = b""
        self.sse_buf, self.crlf_events, self.last_block = b"", False, b""
        self.cum, self.fast = 0, None
        self.done_seen = False
        self.offset = time.time() - perf_counter()
        # Until the first token, read little: a read is stamped with its last packet's arrival, and a
        # big read could reach past the first token's packet into later ones.
        self.read_size = _FIRST_READ_SIZE
        self.timer = self.loop.call_later(timeout, self._timed_out, timeout)

    def _timed_out(self, timeout: float) -> None:
        self._fail(f"no complete response within {timeout:g} s (client timeout)")

    def _settle(self, retry: bool = False) -> None:
        rec, self.rec = self.rec, None
        self.clean = False
        self.timer.cancel()
        if not self.fut.done():
            self.fut.set_result(retry)
        if self.sending:  # the server answered before reading the whole request: do not reuse
            self.keep_alive = False
        if rec is not None and (self.closed or not self.keep_alive):
            self.close()
        else:
            self.pool.release(self)

    def _fail(self, error: str) -> None:
        if self.rec is None:
            return
        self.rec.error = error
        self.rec.ok = False
        self.keep_alive = False
        self._settle()

    def _end_body(self, now: float) -> None:
        rec = self.rec
        if rec is None:  # the body of the request in flight
            raise RuntimeError(NO_REQUEST)
        rec.end = now
        if self.status != 200:
            text = self.err_body.decode("utf-8", "replace").strip().replace("\n", " ")[:300]
            self._fail(f"HTTP {self.status}: {text}")
            return
        if self.sse_buf.strip():
            tail, self.sse_buf = self.sse_buf.strip(), b""
            self._events(tail, now)
            if self.rec is None:  # an error event failed the request
                return
        if self.fast and rec.usage is None:
            self._final_usage()
        if not rec.arrivals:
            self._fail("stream ended without any token" + ("" if self.done_seen else " (no [DONE])"))
            return
        rec.ok = True
        self._settle()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.loop.remove_reader(self.sock.fileno())
        self.sock.close()

    # -- HTTP framing -----------------------------------------------------------------------------
    def _head(self, data: bytes) -> bytes | None:
        buf = self.head_buf + data if self.head_buf else data.lstrip(b"\r\n")
        end = buf.find(b"\r\n\r\n")
        if end < 0:
            if len(buf) > _MAX_HEAD:
                self._fail("response head larger than 64 KiB")
            else:
                self.head_buf = buf
            return None
        lines = buf[:end].decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        try:
            self.status = int(parts[1])
        except (IndexError, ValueError):
            self._fail(f"not an HTTP response: {lines[0][:80]!r}")
            return None
        for line in lines[1:]:
            name, _, value = line.partition(":")
            name, value = name.strip().lower(), value.strip().lower()
            if name == "transfer-encoding" and "chunked" in value:
                self.body_mode = "chunked"
            elif name == "content-length" and self.body_mode != "chunked":
                self.body_mode, self.left = "length", int(value)
            elif name == "connection" and value == "close":
                self.keep_alive = False
        if parts[0] == "HTTP/1.0" or self.body_mode == "close":
            self.keep_alive = False
        self.in_head = False
        if self.body_mode == "length" and self.left == 0:
            self.body_done = True
        return buf[end + 4 :]

    def _dechunk(self, data: bytes) -> bytes:
        out = []
        pos = 0
        if self.size_buf:
            data, self.size_buf = self.size_buf + data, b""
        n = len(data)
        while pos < n:
            if self.left:
                take = min(self.left, n - pos)
                out.append(data[pos : pos + take])
                pos += take
                self.left -= take
                if not self.left:
                    self.crlf_left = 2
                continue
            if self.crlf_left:
                skip = min(self.crlf_left, n - pos)
                pos += skip
                self.crlf_left -= skip
                continue
            eol = data.find(b"\r\n", pos)
            if eol < 0:
                self.size_buf = data[pos:]
                break
            try:
                size = int(data[pos:eol].split(b";", 1)[0], 16)
            except ValueError:
                self._fail(f"bad chunk size line {data[pos:eol][:40]!r}")
                return b""
            pos = eol + 2
            if size == 0:
                self.body_done = True  # trailers, if any, are ignored
                break
            self.left = size
        return out[0] if len(out) == 1 else b"".join(out)
