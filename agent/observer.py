"""Progress of a run as events: always appended to the run's events.jsonl, optionally shown live.

Nodes call `observer.emit("patch_kept", kind=..., ...)`; they never print. The CLI adds a sink:
`JsonlSink` (--json, one JSON object a line on stdout) or `RichProgress` (a live status line plus a
line per notable event).
"""
from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

from rich.console import Console
from rich.live import Live
from rich.text import Text

from agent.rundir import RunDir

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


_SHOWN = {
    "note": lambda e: e["message"],
    "build_done": lambda e: f"build #{e['number']}: {'green' if e['ok'] else str(e['failures']) + ' failing'}"
                            f" in {e['duration_s']:.0f}s ({e['log']})",
    "diagnosed": lambda e: f"{e['count']} failure(s) from {e['stage']}: {', '.join(e['kinds'])}",
    "patch_kept": lambda e: f"kept   {e['proposer']} fix for {e['kind']} {e.get('file') or ''} -> {e['commit'][:10]}",
    "patch_reverted": lambda e: f"revert {e['proposer']} fix for {e['kind']} {e.get('file') or ''}: {e['reason']}",
    "unfixable": lambda e: f"no fix for {e['kind']} {e.get('file') or ''}: {e['reason']}",
    "stage": lambda e: f"{e['stage']}: {e['status']}" + (f" ({e['detail']})" if e.get("detail") else ""),
    "stopped": lambda e: f"stopped: {e['reason']}",
    "report": lambda e: f"report: {e['path']}",
}


class RichProgress:
    """Live status (phase, iteration, failures, patches, builds, tokens, elapsed) for a terminal."""

    def __init__(self, console: Console | None = None):
        self.console = console or Console(stderr=True)
        self.started = time.monotonic()
        self.status = {"phase": "-", "iteration": 0, "open": 0, "fixed": 0, "kept": 0, "reverted": 0,
                       "builds": 0, "launches": 0, "tokens": 0}
        self.live = Live(self._line(), console=self.console, transient=True, refresh_per_second=4)

    def __enter__(self) -> RichProgress:
        self.live.start()
        return self

    def __exit__(self, *exc) -> None:
        self.live.stop()

    def _line(self) -> Text:
        s = self.status
        elapsed = time.monotonic() - self.started
        return Text(f"[{s['phase']}] iter {s['iteration']}  failures open {s['open']} fixed {s['fixed']}  "
                    f"patches kept {s['kept']} reverted {s['reverted']}  builds {s['builds']}  "
                    f"launches {s['launches']}  tokens {s['tokens']}  {elapsed:.0f}s", style="bold cyan")

    def __call__(self, event: dict[str, Any]) -> None:
        name = event["event"]
        s = self.status
        if name == "phase":
            s["phase"], s["iteration"] = event["phase"], event.get("iteration", s["iteration"])
        elif name == "diagnosed":
            s["open"] = event["count"]
        elif name == "patch_kept":
            s["kept"] += 1
            s["fixed"] += 1
        elif name == "patch_reverted":
            s["reverted"] += 1
        counters = event.get("counters")
        if counters:
            s["builds"], s["launches"] = counters.get("builds", 0), counters.get("launches", 0)
            s["tokens"] = counters.get("tokens_in", 0) + counters.get("tokens_out", 0)
        shown = _SHOWN.get(name)
        if shown is not None:
            self.console.print(shown(event), highlight=False)
        self.live.update(self._line())
