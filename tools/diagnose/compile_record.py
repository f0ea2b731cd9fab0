"""One compiler/linker error and the helpers that name its translation unit."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tools.diagnose import compile_patterns as P
from tools.diagnose.repo_paths import normalize


@dataclass
class CompilerDiagnostic:
    """One compiler/linker error with the lines that explain it."""

    file: str | None
    line: int | None
    column: int | None
    message: str
    tool: str
    """The format it came in: clang, gcc, nvcc, ld, driver."""
    lines: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    source_line: str = ""
    unit: str | None = None
    target: str | None = None
    link_symbol: str | None = None
    chain: list[str] = field(default_factory=list)
    """Files the error was reached through, innermost first (include chain, CMake call stack)."""
    indent: int = 0


def source_of_command(cmd: str) -> str | None:
    """The translation unit a compile command builds (the file after -c, else the first source)."""
    tokens = cmd.replace("&&", " ").split()
    for i, tok in enumerate(tokens[:-1]):
        if tok == "-c" and tokens[i + 1].endswith(P.SOURCE_EXTS):
            return tokens[i + 1]
    for tok in tokens:
        if tok.endswith(P.SOURCE_EXTS) and not tok.startswith("-"):
            return tok
    return None


def unit_of_output(outputs: str) -> str | None:
    """CMake names objects after their source (x.cu.o): recover it when no command follows."""
    first = outputs.split()[-1] if ": " in outputs else outputs.split()[0]  # make: "build.make:91: x.cu.o"
    for ext in P.SOURCE_EXTS:
        if first.endswith((ext + ".o", ext + ".obj")):
            # objects live under <source dir>/CMakeFiles/<target>.dir/<path>, ".." spelled "__"
            unit = re.sub(r"CMakeFiles/[^/]+\.dir/", "", first.rsplit(".", 1)[0]).replace("__/", "../")
            return normalize(unit)
    return None
