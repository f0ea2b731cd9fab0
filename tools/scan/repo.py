"""Scan a whole tree: find the files, scan them in parallel, then apply what only the tree knows.

Tree-level facts: a CUDA name that a compat header defines for ROCm (`#define __shfl_xor_sync ...`,
`typedef __hip_bfloat16 __nv_bfloat16;` under USE_ROCM) is not reported in files that include that
header (transitively); a "CUDA header" that the repo itself provides (a shim) is not reported; and a
hipifying profile drops what torch's hipify translates.
"""
from __future__ import annotations

import os
import posixpath
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, fields
from multiprocessing import get_context
from pathlib import Path

from tools.records import Failure
from tools.scan.catalog import IDENTIFIER_RE
from tools.scan.findings import dedupe_signatures
from tools.scan.hipify import hipify_translates
from tools.scan.scanner import FileResult, is_scannable, scan_path

SKIP_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__", "node_modules", ".tox", ".venv", "venv",
                       ".eggs", "site-packages", ".mypy_cache", ".pytest_cache", ".ruff_cache"})
VENDORED_DIRS = frozenset({"third_party", "3rdparty", "third-party", "thirdparty", "vendor", "external"})
_HEADER_KINDS = ("cuda_header", "cub", "cuda_std")
_HEADER_SUFFIXES = (".h", ".hpp", ".hh", ".hxx", ".cuh", ".inl", ".ipp", ".tcc")
PARALLEL_MIN_FILES = 200
_CHUNK = 64


class ScanError(ValueError):
    """The scan cannot start (bad path); the message is one line for the user."""


@dataclass
class ScanReport:
    """A tree scan: its findings plus what was skipped and why."""

    root: str
    findings: list[Failure] = field(default_factory=list)
    files_scanned: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    """(repo-relative path, reason): binary, too large, unreadable file or directory, not Python."""
    hipify: bool = False
    seconds: float = 0.0


def discover(root: Path, *, include_vendored: bool = False) -> tuple[list[str], list[tuple[str, str]]]:
    """Scannable repo-relative paths under root (sorted), and unreadable directories with reasons.
    Symlinks are not followed out of the tree."""
    files: list[str] = []
    problems: list[tuple[str, str]] = []
    skip = SKIP_DIRS if include_vendored else SKIP_DIRS | VENDORED_DIRS

    def on_error(exc: OSError) -> None:
        where = os.path.relpath(exc.filename, root) if exc.filename else "?"
        problems.append((where.replace(os.sep, "/"), f"unreadable directory: {exc.strerror or exc}"))

    root_real = os.path.realpath(root)
    for dirpath, dirnames, filenames in os.walk(root, onerror=on_error):
        dirnames[:] = sorted(d for d in dirnames if d not in skip and not d.endswith(".egg-info"))
        rel_dir = os.path.relpath(dirpath, root)
        for name in filenames:
            rel = name if rel_dir == "." else f"{rel_dir}/{name}".replace(os.sep, "/")
            if not is_scannable(rel):
                continue
            full = os.path.join(dirpath, name)
            if os.path.islink(full) and not os.path.realpath(full).startswith(root_real + os.sep):
                continue
            files.append(rel)
    files.sort()
    return files, problems


_FIELDS = tuple(f.name for f in fields(Failure))
_Packed = tuple[str, list[tuple], set[str], list[str], list[str], str | None]


def _scan_chunk(root: str, rels: list[str], hipify: bool) -> list[FileResult]:
    return [scan_path(root, rel, hipify=hipify) for rel in rels]


def _scan_chunk_packed(root: str, rels: list[str], hipify: bool) -> list[_Packed]:
    """A worker's results as plain tuples: they pickle and unpickle about twice as fast as
    dataclasses, which matters when a big tree has tens of thousands of findings."""
    return [(r.path, [tuple(getattr(f, n) for n in _FIELDS) for f in r.findings], r.provides, r.includes,
             r.cuda_includes, r.note) for r in _scan_chunk(root, rels, hipify)]


def _unpack(packed: _Packed) -> FileResult:
    path, findings, provides, includes, cuda_includes, note = packed
    return FileResult(path, [Failure(*values) for values in findings], provides, includes, cuda_includes, note)


def _scan_all(root: Path, rels: list[str], hipify: bool, jobs: int) -> list[FileResult]:
    if jobs <= 1 or len(rels) < PARALLEL_MIN_FILES:
        return _scan_chunk(str(root), rels, hipify)
    chunks = [rels[i:i + _CHUNK] for i in range(0, len(rels), _CHUNK)]
    with ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("fork")) as pool:
        parts = pool.map(_scan_chunk_packed, [str(root)] * len(chunks), chunks, [hipify] * len(chunks))
        return [_unpack(packed) for part in parts for packed in part]


class _IncludeGraph:
    """Resolves `#include` names to repo files the way a build with -I<every dir> would."""

    def __init__(self, results: dict[str, FileResult]):
        self.results = results
        self.by_suffix: dict[str, list[str]] = {}
        for rel in results:
            self.by_suffix.setdefault(posixpath.basename(rel), []).append(rel)
        self._visible: dict[str, set[str]] = {}
        self._resolved: dict[tuple[str, str], list[str]] = {}

    def resolve(self, includer: str, header: str) -> list[str]:
        """Repo files an include may name: the one beside the includer, else any with that suffix."""
        key = (posixpath.dirname(includer), header)
        found = self._resolved.get(key)
        if found is None:
            beside = posixpath.normpath(posixpath.join(key[0], header))
            if beside in self.results:
                found = [beside]
            else:
                found = [p for p in self.by_suffix.get(posixpath.basename(header), ())
                         if p == header or p.endswith("/" + header)]
            self._resolved[key] = found
        return found

    def visible_names(self, rel: str) -> set[str]:
        """CUDA names defined for ROCm by the file and everything it includes."""
        if rel in self._visible:
            return self._visible[rel]
        names: set[str] = set()
        seen, todo = {rel}, [rel]
        while todo:
            current = todo.pop()
            names |= self.results[current].provides
            for header in self.results[current].includes:
                for target in self.resolve(current, header):
                    if target not in seen:
                        seen.add(target)
                        todo.append(target)
        self._visible[rel] = names
        return names


    def rocm_reachable(self) -> set[str]:
        """Files the ROCm build can compile: every source file and every header nobody includes,
        plus what they include outside CUDA-only branches. A header reached only through
        `#ifndef USE_ROCM` includes is CUDA-only, so its constructs need no ROCm guard."""
        included = {t for r in self.results.values() for h in (*r.includes, *r.cuda_includes)
                    for t in self.resolve(r.path, h)}
        todo = [p for p in self.results if p not in included or not p.endswith(_HEADER_SUFFIXES)]
        reached = set(todo)
        while todo:
            current = todo.pop()
            for header in self.results[current].includes:
                for target in self.resolve(current, header):
                    if target not in reached:
                        reached.add(target)
                        todo.append(target)
        return reached


def _keep(f: Failure, graph: _IncludeGraph, hipify: bool) -> bool:
    if hipify and hipify_translates(f):
        return False
    symbol = f.symbol or ""
    if f.kind in _HEADER_KINDS:
        return not graph.resolve(f.file or "", symbol)
    if IDENTIFIER_RE.fullmatch(symbol):
        return symbol not in graph.visible_names(f.file or "")
    return True


def scan_tree(path: str | Path, *, hipify: bool = False, jobs: int | None = None,
              include_vendored: bool = False, root: str | Path | None = None) -> ScanReport:
    """Scan a directory (or one file, named relative to `root`) and return findings plus skip notes."""
    started = time.perf_counter()
    target = Path(path)
    if not target.exists():
        raise ScanError(f"{path}: no such file or directory; pass a repo checkout or a source file")
    if target.is_file():
        base = Path(root) if root is not None else target.parent
        try:
            rel = target.resolve().relative_to(base.resolve()).as_posix()
        except ValueError as exc:
            raise ScanError(f"{path} is not inside {base}") from exc
        root, rels, problems = base, [rel], []
    else:
        root = target
        rels, problems = discover(root, include_vendored=include_vendored)
    jobs = jobs if jobs is not None else min(len(os.sched_getaffinity(0)), 8)
    results = {r.path: r for r in _scan_all(root, rels, hipify, jobs)}
    graph = _IncludeGraph(results)
    reachable = graph.rocm_reachable()
    findings = [f for r in results.values() if r.path in reachable for f in r.findings
                if _keep(f, graph, hipify)]
    skipped = problems + [(r.path, r.note) for r in results.values() if r.note]
    return ScanReport(str(root), dedupe_signatures(findings), len(rels), sorted(skipped), hipify,
                      round(time.perf_counter() - started, 3))
