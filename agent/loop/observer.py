"""Progress of a run as events: always appended to the run's events.jsonl, optionally shown live.

Nodes call `observer.emit("patch_kept", kind=..., ...)`; they never print. The CLI adds a sink:
`JsonlSink` (--json, one JSON object a line on stdout) or `RichProgress` (agent/loop/progress.py: a live
panel on a terminal, a heartbeat line in logs, plus a line per notable event).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

from agent.loop.rundir import RunDir

Sink = Callable[[dict[str, Any]], None]


class Observer:
    """Stamps events with time and run id, writes them to the run dir, forwards them to sinks."""

    def __init__(self, rundir: RunDir | None = None, sinks: list[Sink] | None = None):
        self.rundir = rundir
        self.sinks = list(sinks or [])
        self.events: list[dict[str, Any]] = []

    def emit(self, event: str, **fields: Any) -> None:
        record = {"event": event, "ts": round(time.time(), 3)}
        if self.rundir is not None:
            record["run_id"] = self.rundir.run_id
            self.rundir.append_event({**record, **fields})
        record.update(fields)
        self.events.append(record)
        for sink in self.sinks:
            sink(record)

    def named(self, event: str) -> list[dict[str, Any]]:
        """The events of one name emitted by this process (tests and summaries)."""
        return [e for e in self.events if e["event"] == event]


class JsonlSink:
    """--json: the event stream for machines."""

    def __init__(self, stream: TextIO | None = None):
        self.stream = stream or sys.stdout

    def __call__(self, event: dict[str, Any]) -> None:
        self.stream.write(json.dumps(event, default=str) + "\n")
        self.stream.flush()


from agent.loop.progress import RichProgress  # noqa: E402  (the terminal sink lives with the other progress code)

__all__ = ["JsonlSink", "Observer", "RichProgress", "Sink"]
