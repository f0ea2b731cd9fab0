"""Which translation units a patch touches: edited sources, plus sources that include an edited header."""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path

from tools.files import read_regular_text

SOURCE_EXTS = (".cu", ".cpp", ".cc", ".cxx", ".hip", ".c")
HEADER_EXTS = (".h", ".cuh", ".hpp", ".hh", ".inl", ".cuhpp")
DEFAULT_SOURCES = ["**/*.cu", "**/*.cpp", "**/*.cc", "**/*.hip"]
_SKIP_DIRS = {".git", "build", "dist", "node_modules", "__pycache__", ".venv", "third_party", "3rdparty"}


def source_files(root: Path) -> list[str]:
    """Repo-relative C/C++/CUDA sources and headers, skipping VCS, build and vendored folders."""
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in _SKIP_DIRS and not d.startswith(".")]
        out.extend(
            os.path.relpath(os.path.join(dirpath, name), root)
            for name in filenames
            if name.endswith(SOURCE_EXTS + HEADER_EXTS)
        )
    return sorted(out)


def _resolve(root: Path, includer: str, header: str, files: set[str]) -> str | None:
    """The repo file an #include names: relative to the includer, the repo root, or any path suffix."""
    for base in (os.path.dirname(includer), ""):
        cand = os.path.normpath(os.path.join(base, header))
        if cand in files:
            return cand
    suffix = "/" + header.lstrip("./")
    matches = [f for f in files if f.endswith(suffix)]
    return matches[0] if len(matches) == 1 else None


def include_graph(root: Path) -> dict[str, set[str]]:
    """Repo file -> the repo files it #includes directly."""
    from agent.proposers.rules.cpp import (
        include_of,  # agent.proposers.rules imports this module: import it when used
    )

    files = source_files(root)
    known = set(files)
    graph: dict[str, set[str]] = {}
    for rel in files:
        try:
            text = read_regular_text(root / rel)
        except OSError:
            continue  # a FIFO or device named like a source, or gone: it includes nothing
        deps = {_resolve(root, rel, h, known) for h in (include_of(ln) for ln in text.splitlines()) if h}
        graph[rel] = {d for d in deps if d}
    return graph


def is_source(rel: str, patterns: list[str] | None = None) -> bool:
    if patterns:
        return any(fnmatch.fnmatch(rel, p) or fnmatch.fnmatch(rel, p.replace("**/", "")) for p in patterns)
    return rel.endswith(SOURCE_EXTS)


def touched_units(
    root: Path, touched: list[str], patterns: list[str] | None = None, limit: int = 8
) -> list[str]:
    """Translation units to compile for a patch touching `touched` (transitive includers of headers)."""
    root = Path(root)
    cpp_touched = [t for t in touched if t.endswith(SOURCE_EXTS + HEADER_EXTS)]
    units = [t for t in cpp_touched if t.endswith(SOURCE_EXTS)]
    headers = {t for t in cpp_touched if t.endswith(HEADER_EXTS)}
    graph = include_graph(root) if headers or units else {}
    if headers:
        reached = set(headers)
        changed = True
        while changed:  # transitive closure over includers
            changed = False
            for rel, deps in graph.items():
                if rel not in reached and deps & reached:
                    reached.add(rel)
                    changed = True
        units += sorted(r for r in reached - headers if r.endswith(SOURCE_EXTS) and is_source(r, patterns))
        # A header nothing includes is still checked on its own.
        units += sorted(h for h in headers if not any(h in graph.get(u, set()) for u in reached))
    seen: list[str] = []
    for u in units:
        for unit in _through_includers(u, graph, patterns):
            if unit not in seen:
                seen.append(unit)
    return seen[:limit]


def _through_includers(rel: str, graph: dict[str, set[str]], patterns: list[str] | None) -> list[str]:
    """The units that compile `rel`: a source another source #includes is compiled as part of it (a unity
    build, or a file the includer instantiates with its own #defines first: deepwave's acoustic.cu needs
    DW_NDIM & co), never alone, where it would meet an `#error` or a missing macro no build sees."""
    if not rel.endswith(SOURCE_EXTS):
        return [rel]
    todo, out, seen = [rel], [], {rel}
    while todo:
        cur = todo.pop(0)
        includers = sorted(
            s for s, deps in graph.items() if cur in deps and s.endswith(SOURCE_EXTS) and s not in seen
        )
        includers = [s for s in includers if is_source(s, patterns)]
        if not includers:
            out.append(cur)
        seen.update(includers)
        todo += includers
    return out
