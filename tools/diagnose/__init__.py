"""Logs -> structured `Failure` records (build logs, server logs, tracebacks).

    diagnose_text(text, repo_root=..., source=...) -> list[Failure]
    diagnose_file(path, repo_root=...)             -> list[Failure]   (streamed, bounded memory)

One pass over the lines: a Python traceback parser, a compiler/build-output parser, a table of
one-line run-time failures, and a catch-all that reports error-looking lines as `unknown`.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable
from pathlib import Path

from tools.diagnose.collect import Collector
from tools.diagnose.compile import CompileParser
from tools.diagnose.lines import DiagnoseError, iter_file_lines, iter_text_lines
from tools.diagnose.python import (
    bare_exception_failure,
    framework_frame,
    is_wrapper,
    traceback_failures,
    warning_failure,
)
from tools.diagnose.python_facts import weight_line
from tools.diagnose.runtime import looks_like_error, match_runtime, worth_a_look
from tools.diagnose.traceback import PyTraceback, TracebackParser
from tools.records import Failure

_CONSEQUENCE = re.compile(
    r"Aborted|core dumped|Killed|failed to start|sigquit|See root cause above|initialization failed"
    r"|exit(?:ed with)? (?:code|status)|returned non-zero exit status|Error 1$"
)

__all__ = ["DiagnoseError", "diagnose_file", "diagnose_lines", "diagnose_text"]


def diagnose_text(
    text: str, *, repo_root: str | Path | None = None, source: str | None = None
) -> list[Failure]:
    """Every failure in an in-memory log, in log order.

    `repo_root` makes paths repo-relative (container mounts, build trees, hipified copies included);
    `source` names what produced the log ("hipcc", "nvcc", "server") where its format alone cannot tell.
    """
    return diagnose_lines(iter_text_lines(text), repo_root=repo_root, source=source)


def diagnose_file(
    path: str | Path, *, repo_root: str | Path | None = None, source: str | None = None
) -> list[Failure]:
    """Every failure in a log file, read as a stream; raises DiagnoseError for a missing or binary file."""
    return diagnose_lines(iter_file_lines(path), repo_root=repo_root, source=source)


def diagnose_lines(
    lines: Iterable[str], *, repo_root: str | Path | None = None, source: str | None = None
) -> list[Failure]:
    """Diagnose cleaned log lines (see `lines.clean_line`)."""
    return _Diagnoser(repo_root, source).run(lines)


class _Diagnoser:
    def __init__(self, repo_root: str | Path | None, source: str | None):
        self.collector = Collector(repo_root, source)
        self.repo_root = repo_root
        self.source = source
        self.compile = CompileParser(self.collector.add_compile)
        self.tracebacks = TracebackParser(
            self._on_traceback, is_message=lambda text: match_runtime(text) is not None
        )
        self.wrapper_tracebacks: list[Failure] = []
        self.recent: deque[str] = deque(maxlen=3)
        self.weight_notice: Failure | None = None

    def run(self, lines: Iterable[str]) -> list[Failure]:
        for line in lines:
            self._feed(line)
            if line.strip():
                self.recent.append(line.rstrip())
        self.tracebacks.finish()
        self.compile.finish()
        return self._result()

    def _feed(self, line: str) -> None:
        was_in_traceback = self.tracebacks.active
        if self.tracebacks.feed(line):
            if not was_in_traceback:
                self.compile.flush_pending()  # keep failures in log order
            return
        if self.compile.feed(line):
            return
        text = line.strip()
        if not text:
            return
        if self._weight_line(text) or not worth_a_look(text):
            return
        failure = warning_failure(text) or bare_exception_failure(text) or self._runtime(text)
        if failure is None and looks_like_error(text):
            failure = Failure(
                kind="unknown", message=text[:500], excerpt=self._excerpt(text), source=self.source or "log"
            )
        if failure is not None:
            self.compile.flush_pending()
            self.collector.add(failure)

    def _weight_line(self, text: str) -> bool:
        """Weight names logged line by line fold into one weight_name failure (one per log)."""
        found = weight_line(text)
        if found is None:
            return False
        symbol, facts = found
        if self.weight_notice is None:
            self.weight_notice = Failure(
                kind="weight_name",
                message=text[:500],
                symbol=symbol,
                excerpt=self._excerpt(text),
                source=self.source or "log",
                facts=facts,
            )
            self.collector.add(self.weight_notice)
            return True
        for key, names in facts.items():
            merged = self.weight_notice.facts.setdefault(key, [])
            merged.extend(n for n in names if n not in merged and len(merged) < 500)
        return True

    def _runtime(self, text: str) -> Failure | None:
        hit = match_runtime(text)
        if hit is None:
            return None
        kind, symbol = hit
        facts = {"dtype": symbol} if kind in ("unsupported_dtype", "fp8_layout") and symbol else {}
        return Failure(
            kind=kind,
            message=text[:500],
            symbol=symbol,
            excerpt=self._excerpt(text),
            source=self.source or "log",
            facts=facts,
        )

    def _excerpt(self, text: str) -> str:
        before = [r.strip() for r in list(self.recent)[-2:]]
        return "\n".join([*before, text])

    def _on_traceback(self, tb: PyTraceback) -> None:
        if tb.frames_only:
            self._locate_bare_failure(tb)
            return
        failures = traceback_failures(tb, self.repo_root)
        if is_wrapper(tb):
            self.wrapper_tracebacks.extend(failures[:1])
            return
        for failure in failures:
            self.collector.add(failure)

    def _locate_bare_failure(self, tb: PyTraceback) -> None:
        """Frames cut off before their exception line belong to the failure logged just before them
        (ComfyUI's "Error occurred when executing X: <message>" then the frames)."""
        last = self.collector.failures[-1] if self.collector.failures else None
        frame = framework_frame(tb.frames_only, self.repo_root)
        if last is not None and last.file is None and last.kind != "unknown" and frame is not None:
            self.collector.relocate(last, frame.path, frame.line)

    def _result(self) -> list[Failure]:
        if not self.collector.failures:
            self._report_wrappers()
        failures = self.collector.failures
        if any(f.kind not in ("unknown", "python_error") for f in failures):
            # "Aborted (core dumped)", "See root cause above": echoes of a failure already diagnosed
            failures = [
                f
                for f in failures
                if not (f.kind in ("unknown", "python_error") and _CONSEQUENCE.search(f.message))
            ]
        return failures

    def _report_wrappers(self) -> None:
        """Only a wrapper said something failed (the compiler's own output is not in the log)."""
        for failure in self.wrapper_tracebacks[:1]:
            failure.kind = "compile_error"
            failure.facts["wrapper"] = True
            self.collector.add(failure)
        if self.compile.wrappers and not self.collector.failures:
            first = self.compile.wrappers[0]
            self.collector.add(
                Failure(
                    kind="compile_error",
                    message=first[:500],
                    excerpt="\n".join(self.compile.wrappers[:5]),
                    source=self.source or "build",
                    facts={"wrapper": True},
                )
            )
