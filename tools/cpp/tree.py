"""A source tree's include graph, and the macros a file sees from the headers it includes.

`#include` names resolve the way a build with `-I<every dir>` would: the file beside the includer
first, else any repo file whose path ends with the name. A header's macros reach every file that
includes it (transitively) through includes the ROCm build compiles; that is how
`#if VLLM_FP8_CVT_X2` in a kernel is known to be 0 on ROCm when core/cuda_compat.h defines it so
under `#ifdef USE_ROCM`. One level of macro flow is modelled: a header's exports are computed from
its own text (plus the built-in ROCm/CUDA configurations), not from what its own includes define.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping

from tools.cpp.build_configs import Macro
from tools.cpp.preprocessor import Seed

HEADER_SUFFIXES = (".h", ".hpp", ".hh", ".hxx", ".cuh", ".inl", ".ipp", ".tcc")

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (tools/__init__.py)
if TYPE_CHECKING:
    from typing import Protocol

    class IncludingFile(Protocol):
        """What the graph reads of one file (tools.scan's FileResult is one)."""

        includes: list[str]
        """Headers included where the ROCm build compiles."""
        cuda_includes: list[str]
        """Headers included only where the ROCm build does not compile."""


class IncludeGraph:
    """Repo files and their `#include` edges; unresolved names (system headers) have no edge."""

    def __init__(self, files: Mapping[str, IncludingFile], same_paths: IncludeGraph | None = None):
        """`same_paths`: a graph over the same paths whose name index and include lookups this
        one reuses (resolution reads only which files exist, not what they include)."""
        self.files = files
        if same_paths is None:
            self.by_name: dict[str, list[str]] = {}
            for rel in files:
                self.by_name.setdefault(posixpath.basename(rel), []).append(rel)
            self.resolved: dict[tuple[str, str], list[str]] = {}
            self._dirs: dict[str, str] = {}
        else:
            self.by_name, self.resolved, self._dirs = (
                same_paths.by_name,
                same_paths.resolved,
                same_paths._dirs,
            )
        self._closure: dict[str, frozenset[str]] = {}
        self._targets: dict[str, list[str]] = {}

    def targets(self, rel: str) -> list[str]:
        """Repo files `rel` includes where the ROCm build compiles the include (resolved once per
        file: a closure walk visits a shared header once per file that reaches it)."""
        found = self._targets.get(rel)
        if found is None:
            found = self._targets[rel] = [t for h in self.files[rel].includes for t in self.resolve(rel, h)]
        return found

    def resolve(self, includer: str, header: str) -> list[str]:
        """Repo files an include may name: the one beside the includer, else any with that suffix."""
        directory = self._dirs.get(includer)
        if directory is None:
            directory = self._dirs[includer] = posixpath.dirname(includer)
        key = (directory, header)
        found = self.resolved.get(key)
        if found is None:
            if _plain(header):  # nothing for normpath to fold (most includes)
                beside = f"{directory}/{header}" if directory else header
            else:
                beside = posixpath.normpath(posixpath.join(directory, header))
            if beside in self.files:
                found = [beside]
            else:
                found = [
                    p
                    for p in self.by_name.get(posixpath.basename(header), ())
                    if p == header or p.endswith("/" + header)
                ]
            self.resolved[key] = found
        return found

    def closure(self, rel: str) -> frozenset[str]:
        """The file and every repo header it includes, transitively, where ROCm compiles the include."""
        if rel in self._closure:
            return self._closure[rel]
        seen, todo = {rel}, [rel]
        while todo:
            current = todo.pop()
            done = self._closure.get(current)
            if done is not None:  # a header's closure is already complete: no need to walk it again
                seen |= done
                continue
            for target in self.targets(current):
                if target not in seen:
                    seen.add(target)
                    todo.append(target)
        self._closure[rel] = frozenset(seen)
        return self._closure[rel]

    def rocm_reachable(self, roots: Iterable[str] | None = None) -> set[str]:
        """Files the ROCm build can compile: the roots (default: every source file and every header
        nobody includes) plus what they include outside CUDA-only branches. A header reached only
        through `#ifndef USE_ROCM` includes is CUDA-only."""
        if roots is None:
            included = {t for rel in self.files for t in self.targets(rel)}
            included.update(
                t for rel, f in self.files.items() for h in f.cuda_includes for t in self.resolve(rel, h)
            )
            roots = [p for p in self.files if p not in included or not p.endswith(HEADER_SUFFIXES)]
        reached: set[str] = set()
        for root in roots:
            if root in self.files and root not in reached:
                reached |= self.closure(root)
        return reached


def _plain(header: str) -> bool:
    """A relative include path with no '.', '..' or empty segment and no trailing '/': joined to a
    normalized directory, it is already what posixpath.normpath would make of it."""
    return not (
        header.startswith(("/", ".")) or header.endswith(("/", ".")) or "//" in header or "./" in header
    )


def merge_exports(exports: Iterable[Mapping[str, tuple[Macro, Macro]]]) -> Seed:
    """One seed from several headers' exported macros; where two disagree, that build's value is
    unknown."""
    seed: Seed = {}
    unknown = Macro(None)
    for table in exports:
        for name, (rocm, cuda) in table.items():
            old = seed.get(name)
            if old is None:
                seed[name] = (rocm, cuda)
            else:
                seed[name] = (rocm if rocm == old[0] else unknown, cuda if cuda == old[1] else unknown)
    return seed


def seed_for(
    graph: IncludeGraph,
    rel: str,
    exports: Mapping[str, Mapping[str, tuple[Macro, Macro]]],
    names: set[str] | None = None,
) -> Seed:
    """The macros `rel` sees from the repo headers it includes (its own definitions excluded);
    with `names`, only those (each macro is merged on its own, so the rest change nothing)."""
    tables = (exports[h] for h in sorted(graph.closure(rel)) if h != rel and exports.get(h))
    if names is not None:
        tables = ({n: pair for n, pair in table.items() if n in names} for table in tables)
    return merge_exports(tables)
