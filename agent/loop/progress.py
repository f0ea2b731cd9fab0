"""Live progress of long work for a person watching: a terminal gets a redrawn panel (spinner, phase,
elapsed time, the current command, the last line its log printed, counters); a pipe or CI log gets a
heartbeat line every 30 s instead, so neither ever looks frozen.

`RichProgress` is an observer sink (`progress(event)`) and a context manager. The panel is redrawn
8 times a second from what is on screen now, so the clock and spinner move between events too.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any, Self, TypedDict

from rich.console import Console, Group
from rich.live import Live
from rich.spinner import Spinner
from rich.text import Text

HEARTBEAT_S = 30.0

_SHOWN = {
    "note": lambda e: e["message"],
    "build_done": lambda e: (
        f"build #{e['number']}: {'green' if e['ok'] else str(e['failures']) + ' failing'}"
        f" in {e['duration_s']:.0f}s ({e['log']})"
    ),
    "diagnosed": lambda e: f"{e['count']} failure(s) from {e['stage']}: {', '.join(e['kinds'])}",
    "patch_kept": lambda e: (
        f"kept   {e['proposer']} fix for {e['kind']} {e.get('file') or ''} -> {e['commit'][:10]}"
    ),
    "patch_reverted": lambda e: (
        f"revert {e['proposer']} fix for {e['kind']} {e.get('file') or ''}: {e['reason']}"
    ),
    "unfixable": lambda e: f"no fix for {e['kind']} {e.get('file') or ''}: {e['reason']}",
    "stage": lambda e: f"{e['stage']}: {e['status']}" + (f" ({e['detail']})" if e.get("detail") else ""),
    "preflight": lambda e: f"preflight: {e['verdict']}",
    "unit_compiled": lambda e: (
        f"[{e['index']}/{e['total']}] {e['unit']}: "
        + ("compiles" if e["ok"] else f"fails: {e['error']}")
        + f" ({e['seconds']:.0f}s)"
    ),
    "stopped": lambda e: f"stopped: {e['reason']}",
    "report": lambda e: f"report: {e['path']}",
}


def one_line(cmd: str) -> str:
    """A command as one line: a multi-line script shows its first line and how long it is (the whole
    text is in the run's logs)."""
    lines = [ln.strip() for ln in str(cmd).strip().splitlines() if ln.strip()]
    if len(lines) <= 1:
        return " ".join(str(cmd).split())
    return f"{lines[0]} … ({len(lines)} lines, in the run's logs)"


def clock(seconds: float) -> str:
    """12s, 3m05s, 1h02m: short and always ticking."""
    s = int(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def last_log_line(logs: Path | None) -> str:
    """The last non-empty line of the newest output in a run's logs dir (a running command, in either sandbox,
    writes `.run-N.out/.err` there; a finished one `NNN-what.log`)."""
    if logs is None or not logs.is_dir():
        return ""
    try:
        files = [p for p in logs.iterdir() if p.suffix in (".out", ".err", ".log") and p.is_file()]
        newest = max(files, key=lambda p: p.stat().st_mtime, default=None)
        if newest is None:
            return ""
        with newest.open("rb") as fh:
            start = max(0, newest.stat().st_size - 4096)
            fh.seek(start)
            tail = fh.read().decode(errors="replace")
    except OSError:  # the command finished and its temporary output was collected meanwhile
        return ""
    lines = tail.splitlines()
    if newest.suffix == ".log" and start == 0:  # rocport's `$ cmd` / `# exit N, Ts` header, not output
        lines = lines[2:]
    lines = [ln.strip() for ln in lines if ln.strip()]
    return lines[-1] if lines else ""


class _Status(TypedDict):
    """What the panel's status line shows: the phase and the run's counters."""

    phase: str
    iteration: int
    open: int
    fixed: int
    kept: int
    reverted: int
    builds: int
    launches: int
    tokens: int


class RichProgress:
    """Phase, iteration, failures, patches, builds, launches, tokens and elapsed time, kept live."""

    def __init__(
        self,
        console: Console | None = None,
        *,
        heartbeat_s: float = HEARTBEAT_S,
        title: str = "",
        events: bool | None = None,
        counters: bool = True,
    ):
        self.console = console or Console(stderr=True)
        self.counters = counters
        """Show the port loop's counters; a sweep, an eval or a fix shows its phase and clocks only."""
        self.events = self.console.is_terminal if events is None else events
        """Print a line per notable event; off in logs by default, where an error must stay one line."""
        self.title = title
        self.heartbeat_s = heartbeat_s
        self.started = self.phase_started = time.monotonic()
        self.status: _Status = {
            "phase": "-",
            "iteration": 0,
            "open": 0,
            "fixed": 0,
            "kept": 0,
            "reverted": 0,
            "builds": 0,
            "launches": 0,
            "tokens": 0,
        }
        self.command = ""
        self.logs: Path | None = None
        self._log_line, self._log_read = "", 0.0
        self._spinner = Spinner("dots", style="bold cyan")
        self._live: Live | None = None
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None

    # -- lifetime ---------------------------------------------------------------------------------
    def __enter__(self) -> Self:
        self.started = self.phase_started = time.monotonic()
        if self.console.is_terminal:
            self._live = Live(self, console=self.console, transient=True, refresh_per_second=8)
            self._live.start()
        elif self.heartbeat_s > 0:
            self._stop.clear()
            self._beat = threading.Thread(target=self._heartbeat, name="rocport-heartbeat", daemon=True)
            self._beat.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None
        self._stop.set()
        if self._beat is not None:
            self._beat.join(timeout=2)
            self._beat = None

    def _heartbeat(self) -> None:
        while not self._stop.wait(self.heartbeat_s):
            self.console.print(self.heartbeat(), markup=False, highlight=False, soft_wrap=True)

    # -- what is shown ----------------------------------------------------------------------------
    def _line(self) -> Text:
        s = self.status
        now = time.monotonic()
        if not self.counters:
            return Text(
                f"[{s['phase']}] {clock(now - self.phase_started)}  total {clock(now - self.started)}",
                style="bold cyan",
            )
        return Text(
            f"[{s['phase']}] {clock(now - self.phase_started)}  iter {s['iteration']}  "
            f"failures open {s['open']} fixed {s['fixed']}  patches kept {s['kept']} "
            f"reverted {s['reverted']}  builds {s['builds']}  launches {s['launches']}  "
            f"tokens {s['tokens']}  total {clock(now - self.started)}",
            style="bold cyan",
        )

    def heartbeat(self) -> str:
        """One line for logs without a terminal: proof of life with the same facts as the panel."""
        line = f"… {self.title + ' ' if self.title else ''}{self._line().plain}"
        if self.command:
            line += f"  $ {self.command}"
        return line

    def last_line(self) -> str:
        now = time.monotonic()
        if now - self._log_read > 0.5:  # the panel redraws 8x a second; the disk is read twice
            self._log_line, self._log_read = last_log_line(self.logs), now
        return self._log_line

    def __rich__(self) -> Group:
        width = max(20, self.console.width - 4)
        frame = self._spinner.render(time.monotonic())  # a Text: the spinner has no text of its own
        head = Text.assemble(frame if isinstance(frame, (str, Text)) else "", " ", self._line())
        rows: list[Any] = [head]
        if self.command:
            rows.append(Text(f"  $ {_fit(self.command, width)}", style="dim", no_wrap=True))
        tail = self.last_line()
        if tail:
            rows.append(Text(f"  > {_fit(tail, width)}", style="dim", no_wrap=True))
        return Group(*rows)

    # -- the sink ---------------------------------------------------------------------------------
    def __call__(self, event: dict[str, Any]) -> None:
        name = event["event"]
        s = self.status
        if self.logs is None and event.get("run_id"):
            from agent.loop.rundir import RunDir

            self.logs = RunDir(event["run_id"]).logs
        if name == "phase":
            if event["phase"] != s["phase"]:
                self.phase_started = time.monotonic()
            s["phase"], s["iteration"] = event["phase"], event.get("iteration", s["iteration"])
            self.command = ""
        elif name in ("command", "build_started", "serve_started"):
            self.command = one_line(event.get("cmd", ""))
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
        if shown is not None and self.events:
            self.console.print(shown(event), markup=False, highlight=False, soft_wrap=True)
        if self._live is not None:
            self._live.refresh()


def _fit(text: str, width: int) -> str:
    """One screen line of a command or log line (the full text is in the run's logs)."""
    return text if len(text) <= width else text[: width - 1] + "…"
