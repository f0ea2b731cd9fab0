"""A lean HTTP/1.1 streaming client for OpenAI-compatible servers, built to measure, not to be measured.

A pool of keep-alive connections (sized to the concurrency, opened before the measured window);
each connection (tools/bench/stream.py) reads its own socket with kernel receive timestamps and
parses the response in place. All events of one read share one timestamp. Per event only the
cumulative `completion_tokens` of the per-chunk usage (`continuous_usage_stats`) is read; json is
parsed once per request (the final usage) unless the server sends no per-chunk usage, in which case
each event is parsed in full (correct, slower). Plain http only: run the client next to the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from dataclasses import dataclass, field
from time import perf_counter
from typing import Any

from tools.bench.stream import SO_TIMESTAMPNS, StreamConnection

SockAddr = tuple[str, int] | tuple[str, int, int, int] | tuple[int, bytes]
"""A socket address as getaddrinfo gives it (IPv4, IPv6, or a raw family)."""


@dataclass(slots=True)
class RequestRecord:
    """What one request did, in perf_counter seconds; metrics are computed from these."""

    rid: str
    phase: str
    isl: int
    osl: int
    cacheable: int
    start: float = 0.0
    first: float = 0.0
    end: float = 0.0
    arrivals: list[float] = field(default_factory=list)
    """Time of each read that carried tokens."""
    chunks: list[int] = field(default_factory=list)
    """SSE content events in that read."""
    tokens: list[int] = field(default_factory=list)
    """Tokens in that read: usage deltas when `tokens_exact`, else one per content event."""
    tokens_exact: bool = True
    resent: bool = False
    """The first attempt's connection closed before any response byte, so it was sent again."""
    usage: dict[str, Any] | None = None
    status: int = 0
    ok: bool = False
    error: str = ""


class ConnectionPool:
    """Keep-alive connections to one host; the caller bounds how many are in use at once."""

    def __init__(self, host: str, port: int, connect_timeout: float = 30.0):
        self.host, self.port = host, port
        self.connect_timeout = connect_timeout
        self.idle: list[StreamConnection] = []
        self.opened = 0
        self.addr: tuple[socket.AddressFamily, SockAddr] | None = None
        """The first getaddrinfo answer, resolved on the first connect."""

    async def _open(self) -> StreamConnection:
        loop = asyncio.get_running_loop()
        if self.addr is None:
            infos = await loop.getaddrinfo(self.host, self.port, type=socket.SOCK_STREAM)
            self.addr = infos[0][0], infos[0][4]
        family, addr = self.addr
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with contextlib.suppress(OSError):  # without kernel stamps, reads are stamped when handled
            sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        try:
            await asyncio.wait_for(loop.sock_connect(sock, addr), self.connect_timeout)
        except BaseException:
            sock.close()
            raise
        self.opened += 1
        return StreamConnection(self, sock, loop)

    async def fill(self, n: int) -> None:
        """Open connections until n are idle, so the measured window never pays for connects."""
        need = n - len(self.idle)
        if need <= 0:
            return
        # every open is awaited, failed or not: one left running past the first failure ended unretrieved,
        # and asyncio printed its traceback at shutdown under the one-line error
        opened = await asyncio.gather(*(self._open() for _ in range(need)), return_exceptions=True)
        failed = [r for r in opened if isinstance(r, BaseException)]
        if failed:
            for conn in opened:
                if isinstance(conn, StreamConnection):
                    conn.close()
            raise failed[0]
        self.idle.extend(r for r in opened if isinstance(r, StreamConnection))

    async def acquire(self) -> StreamConnection:
        while self.idle:
            conn = self.idle.pop()
            if not conn.closed:
                return conn
        return await self._open()

    def release(self, conn: StreamConnection) -> None:
        if not conn.closed:
            self.idle.append(conn)

    def close(self) -> None:
        for conn in self.idle:
            conn.close()
        self.idle.clear()


class StreamClient:
    """Sends planned requests and fills their RequestRecords."""

    def __init__(
        self, pool: ConnectionPool, path: str, host_header: str, timeout: float, api_key: str | None = None
    ):
        self.pool, self.timeout = pool, timeout
        auth = f"Authorization: Bearer {api_key}\r\n" if api_key else ""
        self.head = (
            f"POST {path} HTTP/1.1\r\nHost: {host_header}\r\nContent-Type: application/json\r\n"
            f"Accept: text/event-stream\r\n{auth}"
        ).encode()

    async def send(self, rec: RequestRecord, body: bytes) -> RequestRecord:
        """Send one request and wait for its stream to end; failures are recorded, never raised."""
        loop = asyncio.get_running_loop()
        head = self.head + b"X-Request-Id: %s\r\nContent-Length: %d\r\n\r\n" % (rec.rid.encode(), len(body))
        for attempt in range(2):
            try:
                conn = await self.pool.acquire()
            except (TimeoutError, OSError) as exc:
                rec.error = f"cannot connect to {self.pool.host}:{self.pool.port}: {exc or 'timeout'}"
                return rec
            fut = loop.create_future()
            conn.begin(rec, fut, self.timeout, may_retry=attempt == 0)
            rec.start = perf_counter()
            await conn.send(head + body)
            if not await fut:
                return rec
            rec.resent = True
        rec.error = rec.error or "connection closed by the server before any response"
        return rec
