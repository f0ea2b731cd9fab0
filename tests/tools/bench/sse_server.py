"""A real OpenAI-style streaming server on 127.0.0.1 for the bench tests, with scripted behaviour.

It runs its own asyncio loop in a thread, keeps connections alive, keeps a real prefix cache
(cached tokens = longest common prefix with any earlier prompt) and streams on an absolute
schedule (first token at receive + ttft, then one chunk every itl) so timings are known.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
from dataclasses import dataclass, field


@dataclass
class Behaviour:
    ttft_s: float = 0.03
    itl_s: float = 0.004
    tokens_per_chunk: int = 1
    usage: str = "continuous"
    """continuous (usage in every chunk), final (only the last block), none."""
    split: bool = False
    """Write every chunk frame in three pieces, cut mid-line, as separate TCP writes."""
    crlf: bool = False
    framing: str = "chunked"
    """chunked, or close (HTTP/1.0 style: the body ends when the connection closes)."""
    short_by: int = 0
    """Generate this many tokens fewer than max_tokens (a server ignoring ignore_eos)."""
    fail: str | None = None
    """http500, reset, hang, error_event: what a failing request gets."""
    fail_every: int = 0
    """Every n-th request (by the serial in its X-Request-Id) fails; 0 never, 1 always."""
    role_chunk: bool = True


@dataclass
class Seen:
    """What the server saw of one request."""

    body: dict
    received: float
    first_write: float = 0.0
    cached: int = 0
    path: str = ""
    rid: str = ""
    auth: str = ""
    """The Authorization header, when the client sent one."""


@dataclass
class SSEServer:
    behaviour: Behaviour = field(default_factory=Behaviour)
    seen: list[Seen] = field(default_factory=list)
    connections: int = 0
    in_flight: int = 0
    max_in_flight: int = 0

    def start(self) -> SSEServer:
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()

        def run():
            asyncio.set_event_loop(self.loop)
            self.server = self.loop.run_until_complete(asyncio.start_server(self._conn, "127.0.0.1", 0))
            self.port = self.server.sockets[0].getsockname()[1]
            ready.set()
            self.loop.run_forever()

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        ready.wait(10)
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        async def shutdown():
            self.server.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(shutdown(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()

    # -- protocol -----------------------------------------------------------------------------------
    async def _conn(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                lines = head.decode().split("\r\n")
                length = next(
                    (int(ln.split(":", 1)[1]) for ln in lines if ln.lower().startswith("content-length")), 0
                )
                body = json.loads(await reader.readexactly(length)) if length else {}
                if lines[0].split(" ")[1].endswith("/v1/models"):  # what `rocport bench` asks without --model
                    listing = b'{"object":"list","data":[{"id":"tiny-served","object":"model"}]}'
                    writer.write(
                        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                        % (len(listing), listing)
                    )
                    await writer.drain()
                    continue
                rid = next(
                    (ln.split(":", 1)[1].strip() for ln in lines if ln.lower().startswith("x-request-id")), ""
                )
                auth = next(
                    (ln.split(":", 1)[1].strip() for ln in lines if ln.lower().startswith("authorization")),
                    "",
                )
                seen = Seen(body, time.perf_counter(), path=lines[0].split(" ")[1], rid=rid, auth=auth)
                self.seen.append(seen)
                # The n-th request by its id, so a resent request meets the same fate.
                nth = int(rid.rsplit("-", 1)[1]) if rid[-1:].isdigit() else len(self.seen)
                keep = await self._respond(seen, nth, writer)
                if not keep:
                    return
        except asyncio.CancelledError:
            pass
        finally:
            writer.transport.abort()

    def _prefix_hit(self, prompt) -> int:
        best = 0
        for other in (s.body.get("prompt") for s in self.seen[:-1]):
            if not isinstance(other, list):
                continue
            n = 0
            for a, b in zip(prompt, other, strict=False):
                if a != b:
                    break
                n += 1
            best = max(best, n)
        return best

    async def _respond(self, seen: Seen, nth: int, writer) -> bool:
        b = self.behaviour
        failing = b.fail and b.fail_every and nth % b.fail_every == 0
        if failing and b.fail == "http500":
            msg = b'{"error":{"message":"scripted internal error"}}'
            writer.write(
                b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\n"
                b"Content-Length: %d\r\n\r\n%s" % (len(msg), msg)
            )
            await writer.drain()
            return True
        if failing and b.fail == "reset":
            writer.transport.abort()
            return False
        if failing and b.fail == "hang":
            await asyncio.sleep(3600)
            return False
        prompt = seen.body.get("prompt")
        seen.cached = self._prefix_hit(prompt) if isinstance(prompt, list) else 0
        isl = len(prompt) if isinstance(prompt, list) else 100
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await self._stream(seen, writer, isl, failing)
        finally:
            self.in_flight -= 1
        return b.framing == "chunked"

    async def _stream(self, seen: Seen, writer, isl: int, failing: bool) -> None:
        b = self.behaviour
        chat = seen.path.endswith("/chat/completions")
        osl = max(0, seen.body.get("max_tokens", 16) - b.short_by)
        head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
        head += (
            b"Transfer-Encoding: chunked\r\n\r\n" if b.framing == "chunked" else b"Connection: close\r\n\r\n"
        )
        writer.write(head)
        events = []
        if chat and b.role_chunk:
            events.append(
                {
                    "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}],
                    **self._usage(isl, 0, seen.cached, per_chunk=True),
                }
            )
        done = 0
        while done < osl:
            n = min(b.tokens_per_chunk, osl - done)
            done += n
            choice = {"index": 0, "delta": {"content": " x" * n}} if chat else {"index": 0, "text": " x" * n}
            events.append({"choices": [choice], **self._usage(isl, done, seen.cached, per_chunk=True)})
        if failing and b.fail == "error_event":
            events = [*events[:2], {"error": {"message": "scripted mid-stream error"}}]
        elif b.usage != "none":
            events.append({"choices": [], **self._usage(isl, osl, seen.cached, per_chunk=False)})
        start = seen.received + b.ttft_s
        content = 0
        for ev in events:
            is_content = bool(ev.get("choices")) and not (chat and ev["choices"][0]["delta"].get("role"))
            if is_content:
                # Chunk k goes out k * itl after the first one really went out: a late first token
                # does not make the rest catch up, so TPOT never looks faster than itl.
                base = seen.first_write or start
                await asyncio.sleep(max(0.0, base + content * b.itl_s - time.perf_counter()))
                content += 1
            await self._write(writer, b"data: " + json.dumps(ev).encode() + b"\n\n", seen)
            if is_content and not seen.first_write:
                seen.first_write = time.perf_counter()  # just after the first token's bytes went out
        await self._write(writer, b"data: [DONE]\n\n", seen)
        if b.framing == "chunked":
            writer.write(b"0\r\n\r\n")
        await writer.drain()

    def _usage(self, isl: int, done: int, cached: int, per_chunk: bool) -> dict:
        mode = self.behaviour.usage
        if mode == "none" or (per_chunk and mode != "continuous"):
            return {}
        return {
            "usage": {
                "prompt_tokens": isl,
                "completion_tokens": done,
                "total_tokens": isl + done,
                "prompt_tokens_details": {"cached_tokens": cached},
            }
        }

    async def _write(self, writer, event: bytes, seen: Seen) -> None:
        b = self.behaviour
        if b.crlf:
            event = event.replace(b"\n", b"\r\n")
        frame = b"%x\r\n%s\r\n" % (len(event), event) if b.framing == "chunked" else event
        if not b.split:
            writer.write(frame)
            return
        cuts = [0, 2, len(frame) // 2 + 1, len(frame)]
        for lo, hi in itertools.pairwise(cuts):
            writer.write(frame[lo:hi])
            await writer.drain()
            await asyncio.sleep(0.002)
