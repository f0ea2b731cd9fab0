"""A cheap OpenAI-style SSE server for measuring benchmark clients, not for serving models.

Every completion waits --ttft-ms, then streams max_tokens tokens in chunks of --tokens-per-chunk
(pre-rendered bytes, one socket write per chunk, --itl-ms apart; 0 streams back to back), with
per-chunk usage and a final usage block. It records, per X-Request-Id, when the request's first bytes
reached this server (the kernel's receive stamp) and when its first token was written: GET /truth
returns them (perf_counter seconds, so comparable with a client process on the same machine). The
TTFT delay counts from that arrival, so a server loop busy streaming to others does not shift it.

    python -m evals.bench_stream_server --port 18000 --ttft-ms 80
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import socket
import struct
import time
import typing
from time import perf_counter

_MAX_TOKENS = re.compile(rb'"max_tokens":\s*(\d+)')
_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"


def _chunk(payload: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(payload), payload)


class Renderer:
    """Pre-rendered chunked SSE frames, shared by all requests of one shape."""

    def __init__(self, isl: int, tokens_per_chunk: int, cached: int):
        self.isl, self.tpc, self.cached = isl, tokens_per_chunk, cached
        self.cache: dict[int, list[bytes]] = {}

    def frames(self, osl: int) -> list[bytes]:
        if osl not in self.cache:
            out, done = [], 0
            while done < osl:
                n = min(self.tpc, osl - done)
                done += n
                ev = (
                    b'data: {"id":"cmpl-b","object":"text_completion","model":"m","choices":[{"index":0,'
                    b'"text":"%s","finish_reason":null}],"usage":{"prompt_tokens":%d,"completion_tokens":%d,'
                    b'"total_tokens":%d}}\n\n' % (b" tok" * n, self.isl, done, self.isl + done)
                )
                out.append(_chunk(ev))
            usage = {
                "prompt_tokens": self.isl,
                "completion_tokens": osl,
                "total_tokens": self.isl + osl,
                "prompt_tokens_details": {"cached_tokens": self.cached},
            }
            last = (
                b'data: {"id":"cmpl-b","object":"text_completion","model":"m","choices":[],"usage":%s}\n\n'
                % (json.dumps(usage, separators=(",", ":")).encode())
            )
            out.append(_chunk(last) + _chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")
            self.cache[osl] = out
        return self.cache[osl]


SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)  # Linux; Python does not export it
_TIMESPEC = struct.Struct("qq")
_OFFSET = time.time() - perf_counter()
"""CLOCK_REALTIME (kernel receive stamps) minus perf_counter, to put both on the client's clock."""


class StreamServer:
    """One connection on a raw non-blocking socket: parse requests (keep-alive), stream responses.

    Each read is stamped with the kernel's receive time (SO_TIMESTAMPNS), so a request's truth starts
    when its bytes reached this server, not when a busy loop got round to reading them.
    """

    truth: typing.ClassVar[dict[str, list[float]]] = {}

    def __init__(self, args, renderer: Renderer, sock: socket.socket, loop: asyncio.AbstractEventLoop):
        self.args, self.renderer, self.sock, self.loop = args, renderer, sock, loop
        self.buf = b""
        self.arrived = 0.0
        self.out = bytearray()
        self.open = True
        sock.setblocking(False)
        sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        loop.add_reader(sock.fileno(), self.readable)

    def readable(self) -> None:
        try:
            data, anc, _flags, _addr = self.sock.recvmsg(1 << 16, 64)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self.close()
            return
        stamp = perf_counter()
        if anc:
            sec, ns = _TIMESPEC.unpack_from(anc[0][2])
            stamp = sec + ns * 1e-9 - _OFFSET
        if not self.buf:
            self.arrived = stamp  # the first bytes of the next request
        self.buf += data
        self.parse()

    def parse(self) -> None:
        while True:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                return
            head = self.buf[:end].decode("latin-1")
            length, rid = 0, ""
            for line in head.split("\r\n")[1:]:
                name, _, value = line.partition(":")
                if name.lower() == "content-length":
                    length = int(value)
                elif name.lower() == "x-request-id":
                    rid = value.strip()
            if len(self.buf) < end + 4 + length:
                return
            body, self.buf = self.buf[end + 4 : end + 4 + length], self.buf[end + 4 + length :]
            self.handle(head.split(" ", 2), rid, body, self.arrived)
            self.arrived = perf_counter()  # pipelined bytes already here: arrived no later than now

    def write(self, data: bytes) -> None:
        if not self.open:
            return
        if self.out:
            self.out += data
            return
        try:
            sent = self.sock.send(data)
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError:
            self.close()
            return
        if sent < len(data):
            self.out += data[sent:]
            self.loop.add_writer(self.sock.fileno(), self.writable)

    def writable(self) -> None:
        try:
            sent = self.sock.send(self.out)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self.close()
            return
        del self.out[:sent]
        if not self.out:
            self.loop.remove_writer(self.sock.fileno())

    def close(self) -> None:
        if self.open:
            self.open = False
            self.loop.remove_reader(self.sock.fileno())
            if self.out:
                self.loop.remove_writer(self.sock.fileno())
            self.sock.close()

    def handle(self, request_line: list[str], rid: str, body: bytes, arrived: float) -> None:
        if request_line[0] == "GET" and request_line[1] == "/truth":
            data = json.dumps(self.truth).encode()
            self.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                % (len(data), data)
            )
            return
        m = _MAX_TOKENS.search(body)
        osl = int(m.group(1)) if m else 16
        self.truth[rid] = [arrived, 0.0]
        self.loop.call_at(
            self.loop.time() + self.args.ttft_ms / 1000.0 - (perf_counter() - arrived),
            self.start_stream,
            rid,
            osl,
        )

    def start_stream(self, rid: str, osl: int) -> None:
        if not self.open:
            return
        frames = self.renderer.frames(osl)
        self.truth[rid][1] = perf_counter()
        self.write(_HEAD + frames[0])
        if self.args.itl_ms <= 0:
            for f in frames[1:]:
                self.write(f)
        else:
            self.pace(frames, 1)

    def pace(self, frames: list[bytes], i: int) -> None:
        if not self.open:
            return
        self.write(frames[i])
        if i + 1 < len(frames):
            self.loop.call_later(self.args.itl_ms / 1000.0, self.pace, frames, i + 1)


async def serve(args) -> None:
    renderer = Renderer(args.isl, args.tokens_per_chunk, args.cached)
    loop = asyncio.get_running_loop()
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", args.port))
    listener.listen(4096)
    listener.setblocking(False)
    conns = []

    def accept() -> None:
        while True:
            try:
                sock, _ = listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conns.append(StreamServer(args, renderer, sock, loop))

    loop.add_reader(listener.fileno(), accept)
    print(f"bench stream server on 127.0.0.1:{args.port}", flush=True)
    await asyncio.Event().wait()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=18000)
    ap.add_argument("--ttft-ms", type=float, default=80.0)
    ap.add_argument("--itl-ms", type=float, default=0.0)
    ap.add_argument("--tokens-per-chunk", type=int, default=1)
    ap.add_argument("--isl", type=int, default=128, help="prompt_tokens reported in usage")
    ap.add_argument("--cached", type=int, default=0, help="cached_tokens reported in usage")
    args = ap.parse_args(argv)
    try:
        import uvloop

        runner = asyncio.Runner(loop_factory=uvloop.new_event_loop)
    except ImportError:
        runner = asyncio.Runner()
    with runner:
        runner.run(serve(args))


if __name__ == "__main__":
    main()
