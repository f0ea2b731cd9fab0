"""A cheap OpenAI-style SSE server for measuring benchmark clients, not for serving models.

Every completion waits --ttft-ms, then streams max_tokens tokens in chunks of --tokens-per-chunk
(pre-rendered bytes, one socket write per chunk, --itl-ms apart; 0 streams back to back), with
per-chunk usage and a final usage block. It records, per X-Request-Id, when the request was fully
received and when its first token was written: GET /truth returns them (perf_counter seconds;
CLOCK_MONOTONIC, so comparable with a client process on the same machine).

    python -m evals.bench_stream_server --port 18000 --ttft-ms 80
"""
from __future__ import annotations

import argparse
import asyncio
import json
import re
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
                ev = (b'data: {"id":"cmpl-b","object":"text_completion","model":"m","choices":[{"index":0,'
                      b'"text":"%s","finish_reason":null}],"usage":{"prompt_tokens":%d,"completion_tokens":%d,'
                      b'"total_tokens":%d}}\n\n' % (b" tok" * n, self.isl, done, self.isl + done))
                out.append(_chunk(ev))
            usage = {"prompt_tokens": self.isl, "completion_tokens": osl, "total_tokens": self.isl + osl,
                     "prompt_tokens_details": {"cached_tokens": self.cached}}
            last = b'data: {"id":"cmpl-b","object":"text_completion","model":"m","choices":[],"usage":%s}\n\n' % (
                json.dumps(usage, separators=(",", ":")).encode())
            out.append(_chunk(last) + _chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")
            self.cache[osl] = out
        return self.cache[osl]


class StreamServer(asyncio.Protocol):
    """One connection: parse requests (keep-alive), stream responses."""

    truth: typing.ClassVar[dict[str, list[float]]] = {}

    def __init__(self, args, renderer: Renderer):
        self.args, self.renderer = args, renderer
        self.buf = b""
        self.transport = None

    def connection_made(self, transport):
        self.transport = transport

    def connection_lost(self, exc):
        self.transport = None

    def data_received(self, data: bytes):
        self.buf += data
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
            body, self.buf = self.buf[end + 4:end + 4 + length], self.buf[end + 4 + length:]
            self.handle(head.split(" ", 2), rid, body)

    def handle(self, request_line: list[str], rid: str, body: bytes) -> None:
        if request_line[0] == "GET" and request_line[1] == "/truth":
            data = json.dumps(self.truth).encode()
            self.transport.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                                 % (len(data), data))
            return
        m = _MAX_TOKENS.search(body)
        osl = int(m.group(1)) if m else 16
        self.truth[rid] = [perf_counter(), 0.0]
        loop = asyncio.get_running_loop()
        loop.call_later(self.args.ttft_ms / 1000.0, self.start_stream, rid, osl)

    def start_stream(self, rid: str, osl: int) -> None:
        if self.transport is None:
            return
        frames = self.renderer.frames(osl)
        self.truth[rid][1] = perf_counter()
        self.transport.write(_HEAD + frames[0])
        if self.args.itl_ms <= 0:
            for f in frames[1:]:
                self.transport.write(f)
        else:
            self.pace(frames, 1)

    def pace(self, frames: list[bytes], i: int) -> None:
        if self.transport is None:
            return
        self.transport.write(frames[i])
        if i + 1 < len(frames):
            asyncio.get_running_loop().call_later(self.args.itl_ms / 1000.0, self.pace, frames, i + 1)


async def serve(args) -> None:
    renderer = Renderer(args.isl, args.tokens_per_chunk, args.cached)
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: StreamServer(args, renderer), "127.0.0.1", args.port, backlog=4096)
    print(f"bench stream server on 127.0.0.1:{args.port}", flush=True)
    async with server:
        await server.serve_forever()


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
