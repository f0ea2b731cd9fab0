"""Compiler and build-tool output -> one `CompilerDiagnostic` per error, context folded in.

A streaming state machine: include chains are held until the error they lead to, notes and
source/caret lines attach to the error before them, warnings (unless -Werror) are dropped with
their notes. The translation unit comes from the bottom of the include chain, the failing
ninja/make command, or nvcc's trailer; the compiler from the command or hipcc's trailer.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from tools.diagnose import compile_patterns as P
from tools.diagnose.compile_headers import tool_header
from tools.diagnose.compile_record import CompilerDiagnostic, source_of_command, unit_of_output

MAX_CHAIN = 8
MAX_CONTEXT = 4
MAX_EXCERPT = 30
MAX_GROUP = 200
MAX_KEPT_LINE = 2000


class CompileParser:
    """Feed cleaned lines; diagnostics go to `emit` as each translation unit's output ends."""

    def __init__(self, emit: Callable[[CompilerDiagnostic], None]):
        self.emit = emit
        self.wrappers: list[str] = []
        self._chain: list[str] = []
        self._chain_files: list[str] = []
        self._chain_gcc = False
        self._chain_unit: str | None = None
        self._closing = False
        self._current: CompilerDiagnostic | None = None
        self._ignoring = False
        self._context_left = 0
        self._group: list[CompilerDiagnostic] = []
        self._cmd_unit: str | None = None
        self._cmd_tool: str | None = None
        self._expect_command = False
        self._raw = ""

    # ---- entry points -------------------------------------------------------------------
    def feed(self, line: str) -> bool:
        """Consume `line` if it belongs to compiler/build output; return whether it did."""
        text = line.strip()
        self._raw = line.rstrip()[:MAX_KEPT_LINE]
        if self._closing:
            self._close_after_trailer(text)
        if not text:
            self._context_left = 0
            return False
        if self._context_left <= 0 and not self._chain and not self._expect_command and not P.relevant(text):
            return False
        for handler in (self._boundary, self._header, self._chain_line, self._note_like, self._context):
            if handler(text):
                return True
        return False

    def _close_after_trailer(self, text: str) -> None:
        """clang's trailer ends a unit's output; make may name the unit on the very next line."""
        self._closing = False
        m = P.MAKE_ERROR.match(text)
        unit = unit_of_output(m.group("target")) if m and m.group("target") else None
        for diag in self._group:
            diag.unit = diag.unit or unit
        self._flush(keep_command=True)

    def finish(self) -> None:
        """Flush what is still open at the end of the log."""
        self._flush()

    def flush_pending(self) -> None:
        """Emit the errors seen so far (another parser is about to report a later failure)."""
        if self._group:
            self._flush(keep_command=True)

    # ---- boundaries between translation units ---------------------------------------------
    def _boundary(self, text: str) -> bool:
        if self._expect_command:
            self._expect_command = False
            if P.COMPILER_CMD.search(text):
                self._set_command(text)
                return True
        if P.NINJA_PROGRESS.match(text) or P.MAKE_PROGRESS.match(text):
            self._flush()
            if " -c " in f" {text} " and P.COMPILER_CMD.search(text):
                self._set_command(text)
            return True
        m = P.NINJA_FAILED.match(text)
        if m:
            self._flush()
            inline = P.INLINE_DIAGNOSTIC.search(m.group("outputs"))
            outputs = m.group("outputs")[: inline.start()] if inline else m.group("outputs")
            self._cmd_unit, self._cmd_tool = unit_of_output(outputs) if outputs.strip() else None, None
            self._expect_command = not inline
            if inline:  # `FAILED: x.o x.cu:3:1: error: ...` (a log whose newlines were lost)
                self._raw = inline.group(1)
                self._header(inline.group(1))
            return True
        m = P.CLANG_TRAILER.match(text)
        if m:
            for diag in self._group:
                diag.target = diag.target or m.group("target")
                if diag.tool == "gcc":  # clang >= 16 prints gcc-style gutters; its trailer tells them apart
                    diag.tool = "clang"
            self._current, self._context_left, self._closing = None, 0, True
            return True
        m = P.NVCC_TRAILER.match(text)
        if m:
            for diag in self._group:
                diag.unit = diag.unit or m.group("unit")
                diag.tool = "nvcc" if diag.tool in ("clang", "gcc", "nvcc") else diag.tool
            self._flush(keep_command=True)
            return True
        make = P.MAKE_ERROR.match(text)
        if P.WRAPPER.match(text) or make:
            if len(self.wrappers) < 20:
                self.wrappers.append(text)
            unit = unit_of_output(make.group("target")) if make and make.group("target") else None
            for diag in self._group:
                diag.unit = diag.unit or unit
            self._flush()
            return True
        if len(text) > 40 and " -c " in f" {text} " and P.COMPILER_CMD.search(text):
            self._flush()
            self._set_command(text)
            return True
        return False

    def _set_command(self, text: str) -> None:
        m = P.COMPILER_CMD.search(text)
        self._cmd_tool = m.group("tool") if m else None
        self._cmd_unit = source_of_command(text) or self._cmd_unit

    # ---- error headers -------------------------------------------------------------------
    def _header(self, text: str) -> bool:
        m = P.CLANG_HEADER.match(text)
        if m:
            return self._on_header(m, "clang", text)
        m = P.NVCC_HEADER.match(text)
        if m:
            return self._on_header(m, "nvcc", text)
        diag = tool_header(text)
        if diag is None:
            return False
        self._start(diag, text)
        if diag.tool == "cmake":  # configure-time: the message is on the indented lines that follow
            self._context_left = 12
        return True

    def _on_header(self, m: re.Match[str], fmt: str, text: str) -> bool:
        sev, msg = m.group("sev"), m.group("msg")
        if sev == "note":
            return self._note(text)
        if sev in ("warning", "remark") and "-Werror" not in msg:
            self._chain, self._chain_unit, self._chain_files, self._chain_gcc = [], None, [], False
            self._current, self._ignoring, self._context_left = None, True, MAX_CONTEXT
            return True
        col = m.groupdict().get("col")
        diag = CompilerDiagnostic(m.group("file"), int(m.group("line")), int(col) if col else None, msg, fmt)
        diag.indent = len(self._raw) - len(self._raw.lstrip())
        self._start(diag, text)
        return True

    def _start(self, diag: CompilerDiagnostic, text: str) -> None:
        diag.lines = [*self._chain, self._raw]
        diag.unit = self._chain_unit
        # clang prints the unit first and the innermost includer last; gcc the other way round
        diag.chain = list(self._chain_files) if self._chain_gcc else self._chain_files[::-1]
        self._chain, self._chain_unit, self._chain_files, self._chain_gcc = [], None, [], False
        self._current, self._ignoring, self._context_left = diag, False, MAX_CONTEXT
        self._group.append(diag)
        if len(self._group) >= MAX_GROUP:
            self._flush(keep_command=True)

    # ---- include chains, notes, source lines -----------------------------------------------
    def _chain_line(self, text: str) -> bool:
        clang_level = P.INCLUDED_FROM.match(text)
        gcc_level = P.INCLUDED_MORE.match("  " + text) if self._chain and not clang_level else None
        m = clang_level or gcc_level
        if not m:
            return False
        # clang prints the translation unit first, one "In file included from" per level;
        # gcc prints the direct includer first and the unit as the last "from" line
        if gcc_level or not self._chain:
            self._chain_unit = m.group("file")
        self._chain_gcc = self._chain_gcc or bool(gcc_level)
        if len(self._chain) < MAX_CHAIN:
            self._chain.append(self._raw)
            self._chain_files.append(m.group("file"))
        self._current, self._context_left = None, 0
        return True

    def _note_like(self, text: str) -> bool:
        if P.GCC_CONTEXT.match(text):
            if len(self._chain) < MAX_CHAIN:
                self._chain.append(self._raw)
            self._current, self._context_left = None, 0
            return True
        if P.GCC_REQUIRED.match(text) or P.NVCC_DETECTED.match(text) or P.LD_CONTEXT.match(text):
            return self._note(text)
        return False

    def _note(self, text: str) -> bool:
        if self._ignoring or self._current is None:
            self._context_left = MAX_CONTEXT if self._ignoring else 0
            return True
        self._current.notes.append(text)
        if len(self._current.lines) < MAX_EXCERPT:
            self._current.lines.append(self._raw)
        self._context_left = MAX_CONTEXT
        return True

    def _context(self, text: str) -> bool:
        if self._context_left <= 0:
            return False
        self._context_left -= 1
        if self._ignoring:
            return True
        diag = self._current
        if diag is None:
            return False
        if diag.tool == "cmake":
            self._cmake_context(diag, text)
        elif self._wrapped(diag):
            diag.message += text
        elif not diag.source_line and not diag.notes and not set(text) <= set("^~ |0123456789"):
            source = text.split("|", 1)[1] if P.GCC_SOURCE.match(text) else text
            diag.source_line = source.strip()
            if P.GCC_SOURCE.match(text) and diag.tool == "clang":
                diag.tool = "gcc"
        if len(diag.lines) < MAX_EXCERPT:
            diag.lines.append(self._raw)
        return True

    def _cmake_context(self, diag: CompilerDiagnostic, text: str) -> None:
        """The message lines, then `Call Stack (most recent call first):` and its `file:line (cmd)` lines."""
        frame = P.CMAKE_FRAME.match(text)
        if text.startswith("Call Stack") or frame:
            if frame:
                diag.chain.append(frame.group("file"))
            self._context_left = max(self._context_left, 2)
        else:
            diag.message = (
                f"{diag.message}: {text}" if diag.message.isidentifier() else f"{diag.message} {text}"
            )

    def _wrapped(self, diag: CompilerDiagnostic) -> bool:
        """A terminal wrapped the error line: its rest starts further left than the error did."""
        indent = len(self._raw) - len(self._raw.lstrip())
        return (
            diag.tool in ("clang", "gcc")
            and diag.file is not None
            and not diag.source_line
            and not diag.notes
            and len(diag.lines) == len(diag.chain) + 1
            and indent < diag.indent
        )

    # ---- output ---------------------------------------------------------------------------
    def _flush(self, keep_command: bool = False) -> None:
        for diag in self._group:
            if diag.unit is None:
                diag.unit = self._cmd_unit
            if diag.unit is None and diag.file and diag.file.endswith(P.SOURCE_EXTS):
                diag.unit = diag.file
            if self._cmd_tool in ("hipcc", "amdclang++") or diag.target:
                diag.tool = "hipcc" if diag.tool in ("clang", "gcc") else diag.tool
            elif self._cmd_tool == "nvcc" and diag.tool in ("clang", "gcc"):
                diag.tool = "nvcc"
            self.emit(diag)
        self._group = []
        self._current, self._context_left = None, 0
        if not keep_command:
            self._cmd_unit, self._cmd_tool = None, None
