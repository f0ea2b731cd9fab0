"""Python tracebacks in a log -> `PyTraceback` records (frames, exception chain), streamed.

Handles the wrappers servers and installers put around them: sglang's
`Scheduler hit an exception: Traceback ...`, vLLM's per-line logger prefixes (already peeled by
`prefixes.clean_line`), pip's indentation (frames are found relative to the Traceback line's
indent), chained exceptions and multi-line messages such as torch's state_dict errors.
Pasted tracebacks are often partial: frames without the `Traceback` header start one, a last line
without a `Type:` prefix (tokenizers' Rust errors) is its message when `is_message` says so, and
frames that never reach an exception line are emitted as a `frames_only` traceback.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

MAX_FRAMES = 200
MAX_MESSAGE_LINES = 400
MAX_STRAY_LINES = 40
MAX_MESSAGE_CHARS = 100_000
MAX_CHAIN = 20

_FRAME = re.compile(r'^File "(?P<path>[^"]+)", line (?P<line>\d+)(?:, in (?P<func>.+))?$')
_EXC = re.compile(
    r"^(?P<type>[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning|Resources|Failure|Version"
    r"|Iteration|Fault|Timeout|Error\w*)|KeyError|StopIteration|AssertionError)(?::\s?(?P<msg>.*))?$"
)
# Any dotted name followed by ": message" ends a traceback too (BackendCompilerFailed, c10 errors, ...)
_EXC_ANY = re.compile(r"^(?P<type>[A-Za-z_][\w.]*): (?P<msg>.*)$")
_CHAIN = ("During handling of the above exception", "The above exception was the direct cause")


@dataclass
class Frame:
    path: str
    line: int
    func: str = ""
    code: str = ""


@dataclass
class PyException:
    type: str
    message: str
    frames: list[Frame] = field(default_factory=list)


@dataclass
class PyTraceback:
    """One printed traceback, its chained exceptions in print order (cause first)."""

    chain: list[PyException] = field(default_factory=list)
    frames_only: list[Frame] = field(default_factory=list)
    """Frames of a traceback cut off before its exception line (the message was logged elsewhere)."""


class TracebackParser:
    """Feed cleaned lines; complete tracebacks go to `emit`."""

    def __init__(
        self, emit: Callable[[PyTraceback], None], is_message: Callable[[str], bool] = lambda _: False
    ):
        self.emit = emit
        self.is_message = is_message
        self._tb: PyTraceback | None = None
        self._frames: list[Frame] = []
        self._indent = 0
        self._state = "idle"  # idle | frames | message | between
        self._stray = 0
        self._after_blank = False

    @property
    def active(self) -> bool:
        return self._state != "idle"

    def feed(self, line: str) -> bool:
        """Consume `line` if it is part of a traceback; return whether it was."""
        if "Traceback (most recent call last):" in line:
            if self._state in ("frames", "message") and not self._chained_start():
                self._close()
            self._begin(line)
            return True
        if self._state == "idle":
            if not line.lstrip().startswith('File "') or not _FRAME.match(line.strip()):
                return False
            self._begin(line)  # frames pasted without their `Traceback (most recent call last):` header
        read: Callable[[str], bool] = getattr(self, f"_in_{self._state}")
        return read(line)

    def finish(self) -> None:
        """Emit a traceback cut off by the end of the log."""
        if self._state != "idle":
            self._close()

    # ---- states -----------------------------------------------------------------------------
    def _begin(self, line: str) -> None:
        if self._tb is None:
            self._tb = PyTraceback()
        self._indent = len(line) - len(line.lstrip())
        self._frames, self._state, self._stray, self._after_blank = [], "frames", 0, False

    def _open(self) -> PyTraceback:
        """The traceback being read: frames and messages are only read inside one."""
        if self._tb is None:
            raise RuntimeError("no traceback is open")
        return self._tb

    def _in_frames(self, line: str) -> bool:
        text = line.strip()
        m = _FRAME.match(text)
        if m:
            if len(self._frames) < MAX_FRAMES:
                self._frames.append(
                    Frame(m.group("path"), int(m.group("line")), (m.group("func") or "").strip())
                )
            return True
        indent = len(line) - len(line.lstrip())
        if text and indent > self._indent and not _EXC.match(text):
            if self._frames and not self._frames[-1].code and not set(text) <= set("^~ "):
                self._frames[-1].code = text[:500]
            return True
        m = _EXC.match(text) or (_EXC_ANY.match(text) if self._frames else None)
        if not m and self._frames and text and indent <= self._indent and self.is_message(text):
            m = re.match(r"(?P<type>)(?P<msg>.*)", text)  # a Rust/C++ error surfaced without a Python type
        if m and indent <= self._indent + 1:
            if len(self._open().chain) >= MAX_CHAIN:
                self._open().chain.pop()  # an endless chain keeps its root causes and its last exception
            self._open().chain.append(
                PyException(m.group("type"), (m.group("msg") or "").strip(), self._frames)
            )
            self._state = "message"
            return True
        self._stray += 1
        if self._stray > MAX_STRAY_LINES:  # interleaved output never reached the exception line
            self._close()
            return False
        return True

    def _in_message(self, line: str) -> bool:
        text = line.strip()
        if any(text.startswith(marker) for marker in _CHAIN):
            self._state = "between"
            return True
        if not text:  # a blank line may separate the message from "During handling ..."
            self._after_blank = True
            return True
        indent = len(line) - len(line.lstrip())
        exc = self._open().chain[-1]
        if (
            not self._after_blank
            and (indent > self._indent or line.startswith("\t"))
            and not _FRAME.match(text)
        ):
            if exc.message.count("\n") < MAX_MESSAGE_LINES and len(exc.message) < MAX_MESSAGE_CHARS:
                exc.message += "\n" + text
            return True
        self._close()
        return False

    def _in_between(self, line: str) -> bool:
        if not line.strip():
            return True
        self._close()
        return False

    def _chained_start(self) -> bool:
        return self._state == "between"

    # ---- output --------------------------------------------------------------------------
    def _close(self) -> None:
        tb, self._tb, self._state = self._tb, None, "idle"
        if tb is not None and not tb.chain and self._frames:
            tb.frames_only = self._frames
        if tb is not None and (tb.chain or tb.frames_only):
            self.emit(tb)
