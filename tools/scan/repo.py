"""Scan a whole tree: find the files, scan them in parallel, then apply what only the tree knows.

Tree-level facts: a CUDA name that a compat header defines for ROCm (`#define __shfl_xor_sync ...`,
`typedef __hip_bfloat16 __nv_bfloat16;` under USE_ROCM) is not reported in files that include that
header (transitively); a "CUDA header" that the repo itself provides (a shim) is not reported; and a
hipifying profile drops what torch's hipify translates.
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Callable
from functools import wraps

from tools.cpp.tree import IncludeGraph, seed_for
from tools.files import path_text, stays_inside
from tools.records import Failure
from tools.scan.cache import ResultCache, seed_key
from tools.scan.catalog import IDENTIFIER_RE
from tools.scan.discover import discover
from tools.scan.findings import dedupe_signatures
from tools.scan.fork import FORK_MIN_FILES, can_fork, idle_cores, scan_forked
from tools.scan.hipify import hipify_translates
from tools.scan.python_reach import unreachable, vendor_module
from tools.scan.report import ScanError, ScanReport
from tools.scan.rocm_build import BuildList, real_blocker, summarize_not_built
from tools.scan.scanner import FileResult, scan_path

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (tools/__init__.py)
if TYPE_CHECKING:
    from typing import Any, TypeVar

    _F = TypeVar("_F", bound=Callable[..., Any])

_HEADER_KINDS = ("cuda_header", "cub", "cuda_std")
MAX_PROCESSES = 8
"""Processes a scan uses at most by default (itself and its forked copies), as the process pool it replaced
did (min(cores, 8)); each warms its own memos, and no machine here had more than two cores to measure more."""


def _scan_chunk(root: str, rels: list[str], hipify: bool) -> list[FileResult]:
    return [scan_path(root, rel, hipify=hipify) for rel in rels]


def _scan_all(
    root: str,
    rels: list[str],
    hipify: bool,
    jobs: int | None,
    cache: ResultCache | None,
    meanwhile: Callable[[], object],
) -> list[FileResult]:
    """Every file's result (`meanwhile` runs once, while forked copies scan, if there are any)."""
    if cache is None:
        return _scan_fresh(root, rels, hipify, jobs, meanwhile)
    stored = {rel: cache.get(rel) for rel in rels}
    fresh = _scan_fresh(root, [rel for rel, r in stored.items() if r is None], hipify, jobs, meanwhile)
    for result in fresh:
        cache.put(result)
        stored[result.path] = result
    return [r for r in stored.values() if r is not None]


def _scan_fresh(
    root: str, rels: list[str], hipify: bool, jobs: int | None, meanwhile: Callable[[], object]
) -> list[FileResult]:
    """This process and forked copies as asked (-j N), else one copy per idle core: where the other cores
    are busy, as on a shared machine, a copy costs CPU (each warms its own memos) and gains no wall time.
    Trees of any size go the same way (tools/scan/fork.py): a process pool cost more than bare copies
    sharing a queue even on vLLM's Python package (its start-up, pickling, an idle parent)."""
    wanted = jobs if jobs is not None else min(idle_cores(), MAX_PROCESSES)
    copies = min(wanted, len(rels) // FORK_MIN_FILES)
    if copies > 1 and can_fork():
        return scan_forked(rels, copies, lambda share: _scan_chunk(root, share, hipify), meanwhile)
    meanwhile()
    return _scan_chunk(root, rels, hipify)


class _TreeView(IncludeGraph):
    """The shared include graph plus what only the scan asks of it: compat names in scope."""

    def __init__(self, results: dict[str, FileResult], same_paths: IncludeGraph):
        super().__init__(results, same_paths)
        self.results = results
        self._visible: dict[str, set[str]] = {}

    def visible_names(self, rel: str) -> set[str]:
        """CUDA names defined for ROCm by the file and everything it includes."""
        if rel not in self._visible:
            self._visible[rel] = set().union(*(self.results[p].provides for p in self.closure(rel)))
        return self._visible[rel]


def _keep(f: Failure, graph: _TreeView, hipify: bool) -> bool:
    if hipify and hipify_translates(f):
        return False
    symbol = f.symbol or ""
    if f.kind in _HEADER_KINDS:
        return not graph.resolve(f.file or "", symbol)
    if IDENTIFIER_RE.fullmatch(symbol):
        return symbol not in graph.visible_names(f.file or "")
    return True


def _work(f: Failure) -> bool:
    """Whether a finding in a file outside the ROCm build is work for whoever adds it: a 32-lane
    logical group (warp-size literal with no lane-width-sensitive collective near) is not."""
    return f.kind != "warp_size" or real_blocker(f)


def _rescan_with_header_macros(
    root: str, results: dict[str, FileResult], hipify: bool, cache: ResultCache | None
) -> IncludeGraph:
    """Scan again, with the macros its headers define, each file whose `#if`s read one of them
    (`#if VLLM_FP8_CVT_X2` where core/cuda_compat.h defines it per build). Few files qualify."""
    graph = IncludeGraph(results)
    exports = {rel: r.exports for rel, r in results.items() if r.exports}
    exporters: dict[str, set[str]] = {}
    for header, table in exports.items():
        for name in table:
            exporters.setdefault(name, set()).add(header)
    for rel, result in results.items():
        names = result.condition_names & exporters.keys()
        if not names:  # no header of the tree defines a macro its #ifs read
            continue
        if graph.closure(rel).isdisjoint(set().union(*(exporters[n] for n in names)) - {rel}):
            continue  # nor one it includes: the seed would be empty
        seed = seed_for(graph, rel, exports, names)
        seed = {
            name: pair
            for name, pair in seed.items()
            if name in result.condition_names and (pair[0].defined is not None or pair[1].defined is not None)
        }
        if not seed:
            continue
        key = seed_key(seed)
        stored = cache.get(rel, key) if cache is not None else None
        results[rel] = stored or scan_path(root, rel, hipify=hipify, seed=seed)
        if cache is not None and stored is None:
            cache.put(results[rel], key)
    return graph


def _without_cycle_collection(scan: _F) -> _F:
    """`scan` with cyclic GC paused (then restored): a scan makes hundreds of thousands of short-lived
    lists, tuples and records, none in a reference cycle, and the collector kept walking them (~4% of
    a scan of vLLM's csrc). Reference counting still frees everything as before."""

    @wraps(scan)
    def paused(*args: Any, **kwargs: Any) -> Any:
        enabled = gc.isenabled()
        gc.disable()
        try:
            return scan(*args, **kwargs)
        finally:
            if enabled:
                gc.enable()

    return paused  # type: ignore[return-value]


@_without_cycle_collection
def scan_tree(
    path: str | os.PathLike[str],
    *,
    hipify: bool = False,
    jobs: int | None = None,
    include_vendored: bool = False,
    root: str | os.PathLike[str] | None = None,
    exclude: tuple[str, ...] = (),
    build: BuildList | Callable[[], BuildList | None] | None = None,
    select: tuple[str, ...] = (),
    cache_dir: str | os.PathLike[str] | None = None,
) -> ScanReport:
    """Scan a directory (or one file, named relative to `root`) and return findings plus skip notes.
    With a ROCm build list, findings outside the files it compiles go to `not_built` (a function that
    reads it runs while forked copies scan); `select` keeps only those kinds; with `cache_dir`, files
    unchanged since the last scan are not read."""
    started = time.perf_counter()
    target = path_text(path)  # paths as pathlib would print them, without its import (tools/files.py)
    if not os.path.exists(target):
        raise ScanError(f"{path}: no such file or directory; pass a repo checkout or a source file")
    if os.path.isfile(target):
        base = path_text(root if root is not None else os.path.dirname(target))
        rel = os.path.relpath(os.path.realpath(target), os.path.realpath(base))
        if not stays_inside(rel):
            raise ScanError(f"{path} is not inside {base}")
        root, rels = base, [rel]
        problems: list[tuple[str, str]] = []
    else:
        root = target
        rels, problems = discover(root, include_vendored=include_vendored, exclude=exclude)
    cache = ResultCache(cache_dir, root, hipify) if cache_dir is not None else None
    read: list[BuildList | None] = [None if callable(build) else build]

    def read_build() -> None:
        if callable(build):
            read[0] = build()

    results = {r.path: r for r in _scan_all(root, rels, hipify, jobs, cache, read_build)}
    build_list = read[0]
    before_rescan = _rescan_with_header_macros(root, results, hipify, cache)
    if cache is not None:
        cache.save()
    graph = _TreeView(results, before_rescan)  # same paths: its include lookups hold
    reachable = graph.rocm_reachable()
    compiled, rocm_only = reachable, set()
    if build_list is not None:
        compiled = graph.rocm_reachable(build_list.units - build_list.rocm_only) | {
            p for p in results if build_list.in_build(p)
        }
        rocm_only = graph.rocm_reachable(build_list.rocm_only) - compiled
    imports = {r.path: r.imports for r in results.values() if r.path.endswith(".py")}
    reachable = reachable - unreachable(imports, vendor_module)
    kept = [
        f
        for r in results.values()
        if r.path in reachable
        for f in r.findings
        if (not select or f.kind in select) and _keep(f, graph, hipify)
    ]
    in_build = [f for f in kept if f.file in compiled and (build_list is None or real_blocker(f))]
    outside = [f for f in kept if f.file not in compiled and f.file not in rocm_only and _work(f)]
    report = ScanReport(
        root,
        dedupe_signatures(in_build),
        len(rels),
        sorted(problems + [(r.path, r.note) for r in results.values() if r.note]),
        hipify,
        build=build_list.described if build_list else None,
        not_built=summarize_not_built(outside),
        outside_build=dedupe_signatures(outside),
        rocm_only=len(rocm_only | {r.path for r in results.values() if r.rocm_only}),
    )
    report.seconds = round(time.perf_counter() - started, 3)
    return report
