"""The floor under any Python asyncio benchmark client on this machine: a reader that does nothing.

It sends the same requests over the same kind of keep-alive pool on uvloop and only notes the time
of each request's first read and its end; its CPU per read is what the event loop and the socket
reads cost before a client parses anything. evals/bench_client.py prints it next to rocport's.
"""

from __future__ import annotations

import asyncio
import json
from time import perf_counter, process_time

_END = b"0\r\n\r\n"


class _NoOpReader(asyncio.Protocol):
    def __init__(self):
        self.reads = 0
        self.first = 0.0
        self.done: asyncio.Future | None = None

    def connection_made(self, transport):
        self.transport = transport

    def data_received(self, data: bytes):
        self.reads += 1
        if not self.first:
            self.first = perf_counter()
        if data.endswith(_END) and self.done is not None:
            self.done.set_result(None)


async def floor_run(port: int, conc: int, rounds: int, osl: int) -> dict:
    """Send rounds x conc requests; returns reads, CPU seconds and per-request (rid, start, first)."""
    loop = asyncio.get_running_loop()
    conns = [(await loop.create_connection(_NoOpReader, "127.0.0.1", port))[1] for _ in range(conc)]
    body = json.dumps({"model": "m", "prompt": [1, 2, 3], "max_tokens": osl, "stream": True}).encode()
    firsts = []

    async def one(conn: _NoOpReader, rid: str) -> None:
        conn.done, conn.first = loop.create_future(), 0.0
        start = perf_counter()
        conn.transport.write(
            b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nX-Request-Id: %s\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (rid.encode(), len(body), body)
        )
        await conn.done
        firsts.append((rid, start, conn.first))

    cpu0 = process_time()
    for r in range(rounds):
        await asyncio.gather(*(one(c, f"floor-{conc}-{r}-{i}") for i, c in enumerate(conns)))
    cpu = process_time() - cpu0
    reads = sum(c.reads for c in conns)
    for c in conns:
        c.transport.close()
    return {"reads": reads, "cpu_s": cpu, "firsts": firsts}
