"""SSE events of one response: count tokens and chunks cheaply, parse in full only what needs it.

A mixin of StreamConnection (tools/bench/stream.py), which owns the socket and the HTTP framing;
this half owns the event stream: events split anywhere across reads, LF or CRLF, comments,
[DONE], error events, and the final usage block.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tools.bench.client import RequestRecord

CT = b'"completion_tokens"'
CT_VALUES = re.compile(rb'"completion_tokens":\s*(\d+)')
READ_SIZE = 64 * 1024
"""Read size once the first token is in (a 256 KiB recvmsg buffer cost ~14 us more per read here)."""
NO_REQUEST = "SSE data handled with no request attached to the connection"
"""An invariant broken: bytes are only read into a request in flight."""


class SSEEvents:
    """Event handling; expects rec, cum, fast, last_block, sse_buf, crlf_events, done_seen, read_size."""

    rec: RequestRecord | None
    """The request in flight; None once it is settled (an error event fails it mid-block)."""
    cum: int
    """Cumulative completion tokens the usage blocks have reported so far."""
    fast: bool | None
    """Whether every event carries usage (None until the first event says)."""
    last_block: bytes
    sse_buf: bytes
    crlf_events: bool
    done_seen: bool
    read_size: int

    def _fail(self, error: str) -> None:
        raise NotImplementedError  # the connection settles the request

    # -- SSE --------------------------------------------------------------------------------------
    def _sse(self, payload: bytes, now: float) -> None:
        buf = self.sse_buf + payload if self.sse_buf else payload
        if self.crlf_events or b"\r" in payload:
            self.crlf_events = True
            buf = buf.replace(b"\r\n", b"\n")
        cut = buf.rfind(b"\n\n")
        if cut < 0:
            self.sse_buf = buf
            return
        self.sse_buf = buf[cut + 2 :]
        self._events(buf[:cut], now)

    def _events(self, block: bytes, now: float) -> None:
        """Handle complete events (separated by blank lines) that arrived at `now`."""
        cum = self.cum
        n_events = block.count(b"\n\n") + 1
        if self.fast is not False and block.count(CT) == n_events:
            # Every event carries cumulative usage: count tokens and chunks without parsing json.
            self.fast = True
            self.last_block = block
            m = CT_VALUES.search(block, block.rfind(CT))
            grown = int(m.group(1)) - cum if m else -1
            if grown == n_events:  # one new token per event: no per-event work at all
                chunks = tokens = grown
                cum += grown
            else:
                chunks = tokens = 0
                for v in CT_VALUES.findall(block):
                    c = int(v)
                    if c > cum:
                        chunks += 1
                        tokens += c - cum
                        cum = c
        else:
            chunks, tokens, cum = self._each_event(block, cum)
            if self.rec is None:
                return
        self.cum = cum
        if chunks:
            self._arrived(now, chunks, tokens)

    def _arrived(self, now: float, chunks: int, tokens: int) -> None:
        """Record one read that carried `chunks` content events holding `tokens` tokens."""
        rec = self.rec
        if rec is None:  # chunks are only counted for a request in flight
            raise RuntimeError(NO_REQUEST)
        if not rec.first:
            rec.first = now
            self.read_size = READ_SIZE
        rec.arrivals.append(now)
        rec.chunks.append(chunks)
        rec.tokens.append(tokens)

    def _each_event(self, block: bytes, cum: int) -> tuple[int, int, int]:
        """Event by event: usage-bearing ones cheaply, the rest ([DONE], errors, no usage) in full."""
        chunks = tokens = 0
        for ev in block.split(b"\n\n"):
            m = CT_VALUES.search(ev) if self.fast is not False else None
            if m is not None:
                self.fast = True
                self.last_block = ev
                c = int(m.group(1))
                if c > cum:
                    chunks += 1
                    tokens += c - cum
                    cum = c
                continue
            k = self._slow_event(ev)
            if self.rec is None:
                break
            chunks += k
            tokens += k
        return chunks, tokens, cum

    def _slow_event(self, ev: bytes) -> int:
        """Parse one event in full; returns 1 for a content chunk, 0 otherwise."""
        data = b"\n".join(line[5:].lstrip(b" ") for line in ev.split(b"\n") if line.startswith(b"data:"))
        if not data:
            return 0  # comments (": ping"), event:/id: lines
        if data.strip() == b"[DONE]":
            self.done_seen = True
            return 0
        try:
            obj = json.loads(data)
        except ValueError:
            self._fail(f"malformed SSE event: {data[:120]!r}")
            return 0
        if not isinstance(obj, dict):
            return 0
        if obj.get("error") and not obj.get("choices"):
            err = obj["error"]
            msg = err.get("message", err) if isinstance(err, dict) else err
            self._fail(f"server error event: {str(msg)[:300]}")
            return 0
        rec = self.rec
        if rec is None:  # events are handled only while a request is attached
            raise RuntimeError(NO_REQUEST)
        if obj.get("usage"):
            rec.usage = obj["usage"]
        choices = obj.get("choices") or []
        if not choices:
            return 0
        self.fast = False
        rec.tokens_exact = False
        ch = choices[0]
        if "delta" in ch:  # chat: a role-only chunk is not a token
            delta = ch.get("delta") or {}
            return 1 if (delta.get("content") or delta.get("reasoning_content")) else 0
        return 1

    def _final_usage(self) -> None:
        """Parse the usage of the last event that carried one (the final usage block)."""
        blk = self.last_block
        k = blk.rfind(CT)
        if k < 0:
            return
        s = blk.rfind(b"data:", 0, k)
        e = blk.find(b"\n\n", k)
        raw = blk[s + 5 : e if e >= 0 else len(blk)].strip()
        if raw.endswith(b"\r\n"):
            raw = raw[:-2]
        try:
            usage = json.loads(raw).get("usage")
        except (ValueError, AttributeError):
            return
        if isinstance(usage, dict) and self.rec is not None:
            self.rec.usage = usage
