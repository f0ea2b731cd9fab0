"""Per-file scan results kept between runs, so a rescan reads only the files that changed.

While porting, a tree is scanned again and again with few files changed in between. Each file's
result is stored under the scanned root's cache file with the file's size, mtime and inode (as ruff
and make decide staleness) and the scanner's own version (a hash of tools/scan and tools/cpp source):
an edited file or an edited scanner means a fresh scan of that file. Results of the rescan with
header macros are stored per seed, since they depend on other files.

The cache holds plain values written with `marshal` (never pickle: loading it runs no code), in a
directory only the user can read. A cache that cannot be read or written is ignored: the scan
itself never fails because of it.
"""

from __future__ import annotations

import marshal
import os
from functools import lru_cache

from tools.cpp.build_configs import Macro
from tools.digests import sha256
from tools.files import user_cache_dir
from tools.records import Failure
from tools.scan.scanner import FileResult

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (tools/__init__.py)
if TYPE_CHECKING:
    from typing import Any

    PackedResult = tuple[
        str,
        list[tuple[Any, ...]],
        dict[str, tuple[bool | None, int | None, bool | None, int | None]],
        tuple[Any, ...],
    ]
    """(path, each finding's field values, each export's two macros, the other FileResult fields):
    what marshal stores and a worker process returns."""

_FAILURE_FIELDS = Failure.FIELDS
_RESULT_FIELDS = tuple(n for n in FileResult.FIELDS if n not in ("path", "findings", "exports"))
Stamp = tuple[int, int, int]
"""(size, mtime in ns, inode) of a source file when its result was stored."""


def default_cache_dir() -> str:
    """$ROCPORT_CACHE_DIR/scan, else $XDG_CACHE_HOME/rocport/scan, else ~/.cache/rocport/scan."""
    return os.path.join(user_cache_dir(), "scan")


@lru_cache(maxsize=1)
def scanner_version() -> str:
    """A hash of the scanner's own source: results from another version are never reused."""
    digest = sha256()
    here = os.path.dirname(os.path.realpath(__file__))
    for folder in (here, os.path.join(os.path.dirname(here), "cpp")):
        for name in sorted(n for n in os.listdir(folder) if n.endswith(".py")):
            with open(os.path.join(folder, name), "rb") as source:
                digest.update(name.encode() + b"\0" + source.read())
    return digest.hexdigest()[:16]


def pack(result: FileResult) -> PackedResult:
    """A result as marshal-able plain values."""
    findings = [tuple(getattr(f, n) for n in _FAILURE_FIELDS) for f in result.findings]
    exports = {
        name: (rocm.defined, rocm.value, cuda.defined, cuda.value)
        for name, (rocm, cuda) in result.exports.items()
    }
    return (result.path, findings, exports, tuple(getattr(result, n) for n in _RESULT_FIELDS))


def unpack(packed: PackedResult) -> FileResult:
    path, findings, exports, rest = packed
    result = FileResult(
        path, [Failure(*values) for values in findings], **dict(zip(_RESULT_FIELDS, rest, strict=True))
    )
    result.exports = {n: (Macro(d0, v0), Macro(d1, v1)) for n, (d0, v0, d1, v1) in exports.items()}
    return result


def seed_key(seed: dict[str, tuple[Macro, Macro]]) -> str:
    """A stable text form of the macros a rescan was seeded with."""
    return repr(sorted((n, r.defined, r.value, c.defined, c.value) for n, (r, c) in seed.items()))


def stamp(path: str) -> Stamp | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ino)


class ResultCache:
    """The stored results for one scanned root and hipify setting; `save()` writes what changed."""

    def __init__(self, directory: str | os.PathLike[str], root: str | os.PathLike[str], hipify: bool):
        self.root = os.fspath(root)
        key = f"{os.path.realpath(root)}\0{hipify}\0{scanner_version()}"
        self.path = os.path.join(directory, sha256(key.encode()).hexdigest()[:24] + ".marshal")
        self.entries: dict[str, tuple[Stamp, PackedResult]] = {}
        self.dirty = False
        try:
            # our own cache in rocport's private directory, written by save() below, never downloaded
            with open(self.path, "rb") as stored:
                loaded = marshal.loads(stored.read())  # noqa: S302
            if isinstance(loaded, dict):
                self.entries = loaded
        except (OSError, ValueError, EOFError, TypeError):
            pass  # no cache yet, or a damaged one: start empty
        self.stamps: dict[str, Stamp | None] = {}

    def _stamp(self, rel: str) -> Stamp | None:
        if rel not in self.stamps:
            self.stamps[rel] = stamp(os.path.join(self.root, rel))
        return self.stamps[rel]

    def get(self, rel: str, seed: str = "") -> FileResult | None:
        """The stored result of `rel` (scanned with `seed`) if the file has not changed since."""
        entry = self.entries.get(rel + "\0" + seed if seed else rel)
        current = self._stamp(rel)
        if entry is None or current is None or tuple(entry[0]) != current:
            return None
        return unpack(entry[1])

    def put(self, result: FileResult, seed: str = "") -> None:
        current = self._stamp(result.path)
        if current is None:
            return
        self.entries[result.path + "\0" + seed if seed else result.path] = (current, pack(result))
        self.dirty = True

    def save(self) -> None:
        """Write the cache atomically (private directory); any OSError leaves the old one."""
        if not self.dirty:
            return
        import tempfile  # here: a `--no-cache` scan never writes (~2 ms of imports spared)

        # Only files this scan looked at stay: deleted and renamed files drop out.
        kept = {k: v for k, v in self.entries.items() if k.split("\0", 1)[0] in self.stamps}
        try:
            os.makedirs(os.path.dirname(self.path), mode=0o700, exist_ok=True)
            data = marshal.dumps(kept)
            fd, tmp = tempfile.mkstemp(dir=os.path.dirname(self.path), suffix=".tmp")
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, self.path)
        except (OSError, ValueError):
            return
        self.dirty = False
