"""Which Python modules of a scanned package a ROCm run can import at all.

A module that only vendor modules import (models/<name>/nvidia/..., or modules only such modules
import) is CUDA-only code even though it lives outside a vendor directory: vLLM keeps CuTe-DSL
helpers in models/common/ops/ that only models/*/nvidia/ import. Its findings are not ROCm work.
A module nothing in the tree imports is an entry point (a model registry names it by string, a
console script runs it) and stays reachable.

Import statements are read with one bytes regex per file, so files the finding pre-filter skips still
count as importers; an import this misses can only keep a module reachable, never hide one.

The pre-filter is here too, with what else is read of a Python file's bytes and path without
parsing it: python_rules (the rules, on the file's syntax tree) and `ast` load only in a process
that meets a file the pre-filter lets through (~2.5 ms of a `rocport scan` start otherwise).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterator, Mapping

from tools.cpp.lines import ROCM_ONLY_DIRS
from tools.regex_memo import compile_pattern
from tools.scan.catalog import CUDA_ONLY_MODULES

_IMPORT = compile_pattern(
    rb"[ \t]*(?:from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#;]*)|import[ \t]+([\w., \t]+))"
)
"""One import statement, matched at the start of a line."""


def _import_statements(data: bytes) -> Iterator[re.Match[bytes]]:
    """Matches of _IMPORT at the start of each line holding `import`: finding the word is a fast
    literal search, where a `^`-anchored pattern would be tried at every line."""
    pos, last_line = data.find(b"import"), -1
    while pos >= 0:
        line = data.rfind(b"\n", 0, pos) + 1
        if line != last_line:
            last_line = line
            m = _IMPORT.match(data, line)
            if m:
                yield m
        pos = data.find(b"import", pos + 6)


_NAME = compile_pattern(r"[A-Za-z_]\w*")
_COMMENT = compile_pattern(r"#[^\n]*")


def module_name(rel: str) -> str:
    """`models/flint/model.py` -> `models.flint.model`; a package's `__init__.py` is the package."""
    name = rel.removesuffix(".py").replace("/", ".")
    return name.removesuffix(".__init__") if name != "__init__" else ""


def imported_names(rel: str, data: bytes) -> list[str]:
    """Dotted names a file imports, relative imports resolved against its package (relative to the
    scanned root); `from a import b` names both `a` and `a.b`, since b may be a submodule."""
    package = posixpath.dirname(rel).split("/") if posixpath.dirname(rel) else []
    out: list[str] = []
    for m in _import_statements(data):
        raw_source, raw_names, raw_plain = m.groups(b"")
        if raw_plain:
            plain = raw_plain.decode("utf-8", "replace")
            out += [part.split()[0] for part in plain.split(",") if part.strip()]
            continue
        source, names = raw_source.decode("utf-8", "replace"), raw_names.decode("utf-8", "replace")
        dots = len(source) - len(source.lstrip("."))
        base = source[dots:]
        if dots:
            parent = package[: len(package) - (dots - 1)] if dots - 1 <= len(package) else []
            base = ".".join([*parent, base] if base else parent)
        if base:
            out.append(base)
        if "#" in names:  # comments inside a parenthesised list
            names = _COMMENT.sub("", names)
        for item in names.strip("()").split(","):
            word = _NAME.match(item.strip())
            if word:
                out.append(f"{base}.{word.group(0)}" if base else word.group(0))
    return out


def _resolve(name: str, modules: Mapping[str, str]) -> str | None:
    """The scanned file a dotted name imports, if any: `vllm.models.x` from inside vllm/ is `models.x`."""
    if name in modules:
        return modules[name]
    parts = name.split(".")
    for start in range(1, len(parts)):
        suffix = ".".join(parts[start:])
        if suffix in modules:
            return modules[suffix]
    return None


def unreachable(imports: Mapping[str, list[str]], vendor: Callable[[str], bool]) -> set[str]:
    """Python files (of `imports`: rel -> imported names) that only vendor modules, or modules only
    they import, import."""
    modules = {module_name(rel): rel for rel in imports}
    # A name recurs across files (vLLM's package: 87,767 imported names, 19,386 distinct).
    known: dict[str, str | None] = {}
    importers: dict[str, set[str]] = {}
    for rel, names in imports.items():
        for name in names:
            if name in known:
                target = known[name]
            else:
                target = known[name] = _resolve(name, modules)
            if target is not None and target != rel:
                importers.setdefault(target, set()).add(rel)
    dead = {rel for rel in imports if vendor(rel)}
    changed = True
    while changed:
        changed = False
        for rel, by in importers.items():
            if rel not in dead and by <= dead:
                dead.add(rel)
                changed = True
    return dead


# Plain substrings, each found at memchr speed: a file with none of them cannot have a finding.
PLAIN_NEEDLES = (
    b"import_module",
    b"__import__",
    b"float8_e4m3fn",
    b"version.cuda",
    b"inline_asm_elementwise",
)


def may_have_findings(data: bytes, imports: list[str]) -> bool:
    """Cheap pre-filter on a Python file's bytes and the modules its import statements name (see
    imported_names): False means it cannot produce a finding. One regex over the
    whole file cost more than the rest of the Python scan."""
    return any(needle in data for needle in PLAIN_NEEDLES) or any(
        name.split(".", 1)[0] in CUDA_ONLY_MODULES for name in imports
    )


_CUDA_VENDOR_DIRS = frozenset({"nvidia", "cuda"})
"""A vendor directory (vLLM's models/<name>/nvidia/), the CUDA counterpart of rocm/ and amd/."""


def vendor_module(path: str) -> bool:
    """A module in a vendor directory: nvidia/ or cuda/ (CUDA-only code a ROCm run does not take) or
    rocm/, amd/, hip/ (the framework's own ROCm code). Neither holds ROCm porting work."""
    return any(d in _CUDA_VENDOR_DIRS or d in ROCM_ONLY_DIRS for d in path.lower().split("/")[:-1])
