"""Error lines that carry no compiler `file:line:` location: cmake configure errors, the compiler
driver and linkers, MSVC's linker, location-less clang errors and ld's undefined references.

Each becomes a CompilerDiagnostic; compile.py attaches the lines that follow it.
"""

from __future__ import annotations

from tools.diagnose import compile_patterns as P
from tools.diagnose.compile_record import CompilerDiagnostic


def tool_header(text: str) -> CompilerDiagnostic | None:
    """The diagnostic a build tool's error line starts, or None when `text` is not one."""
    m = P.CMAKE_ERROR.match(text)
    if m:
        return CompilerDiagnostic(m.group("file"), int(m.group("line")), None, m.group("cmd"), "cmake")
    m = P.DRIVER_ERROR.match(text) or P.NVCC_FATAL.match(text)
    if m:
        tool = m.group("tool").rsplit("/", 1)[-1]
        diag = CompilerDiagnostic(
            None, None, None, m.group("msg"), "ld" if tool.startswith(("ld", "lld")) else "driver"
        )
        lm = P.LLD_SYMBOL.match(text)
        if lm:
            diag.link_symbol = lm.group("sym").strip()
        return diag
    m = P.MSVC_LINK.match(text)
    if m:
        diag = CompilerDiagnostic(None, None, None, m.group("msg"), "ld")
        diag.link_symbol = m.group("sym")
        return diag
    m = P.BARE_ERROR.match(text)
    if m:  # LLVM backend errors, hipcc driver and clang option errors
        return CompilerDiagnostic(None, None, None, m.group("msg"), "clang")
    m = P.LINK_REF.match(text) if "undefined reference" in text or "multiple definition" in text else None
    if m:
        diag = CompilerDiagnostic(m.group("file"), None, None, m.group("msg"), "ld")
        diag.link_symbol = m.group("sym")
        return diag
    return None
