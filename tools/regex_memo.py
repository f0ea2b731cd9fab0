"""Compiled regular expressions kept between processes, as Python keeps compiled bytecode.

`re.compile` parses and compiles a pattern in Python code: the ~55 patterns a `rocport scan` compiles
as its modules load cost ~4 ms of every start (a whole scan of vLLM's csrc is ~85 ms; issue 15 holds
it to 3x grep). What the compiler makes of a pattern is plain data: an SRE program (a list of ints)
and its group table, which `re` hands to `_sre.compile` as its last step. `compile_pattern` keeps that
data in one marshal file per interpreter build (`~/.cache/rocport/regex/`) and builds the pattern
from it with that same call. A program is kept only after the pattern built from it compared equal
to `re.compile`'s own (patterns compare by flags and program) on this very interpreter; `_sre` checks
a program again as it loads it. Anything unexpected (no memo yet, an unreadable one, an interpreter
whose `re` internals differ): plain `re.compile`. New programs are written once, at exit.
"""

from __future__ import annotations

import atexit
import marshal
import os
import re
import sys
from functools import lru_cache

from tools.digests import sha256
from tools.files import user_cache_dir

try:  # CPython's own: what `re.compile` itself calls (no stubs: typed as Any here)
    import _sre  # type: ignore[import-not-found]
    from re import _compiler, _parser  # type: ignore[attr-defined]
except ImportError:  # another implementation: no memo
    _sre = None

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (tools/__init__.py)
if TYPE_CHECKING:
    from typing import Any, AnyStr

    Program = tuple[int, list[int], int, dict[str, int], tuple[str | None, ...]]
    """flags, SRE code, groups - 1, group index, index group: `_sre.compile`'s arguments after the
    pattern."""

MAX_BYTES = 1 << 20
"""A memo grown past this (patterns of many rocport versions) starts again from this process's own."""


def _memo_path() -> str | None:
    if _sre is None:
        return None
    build = f"{sys.version}|{sys.implementation.cache_tag}|{_sre.MAGIC}|{_sre.CODESIZE}"
    return os.path.join(user_cache_dir(), "regex", sha256(build.encode()).hexdigest()[:16] + ".marshal")


def _load(path: str | None) -> dict[tuple[Any, int], Program]:
    if path is None:
        return {}
    try:
        # rocport's own memo in the user's private cache directory, written below, never downloaded
        with open(path, "rb") as stream:
            kept = marshal.loads(stream.read())  # noqa: S302
    except (OSError, EOFError, ValueError, TypeError):
        return {}
    return kept if isinstance(kept, dict) else {}


@lru_cache(maxsize=1)
def _writable(path: str) -> bool:
    """Whether the memo could be written: its nearest existing directory takes new files. Where it
    cannot (a read-only home), a miss is compiled once, by `re`, and no program is worked out. Asked on
    the first miss only: a start that finds every pattern in the memo makes no syscall for it."""
    while path:
        if os.path.lexists(path):  # a directory to write in, or a file where one would have to be
            return os.path.isdir(path) and os.access(path, os.W_OK | os.X_OK)
        parent = os.path.dirname(path)
        if parent == path:
            return False
        path = parent
    return False


_PATH = _memo_path()
_KEPT = _load(_PATH)
_used: dict[tuple[Any, int], Program] = {}
_new = False


def compile_pattern(pattern: AnyStr, flags: int = 0) -> re.Pattern[AnyStr]:
    """`re.compile(pattern, flags)`, from the kept program when there is one."""
    key = (pattern, int(flags))
    program = _KEPT.get(key)
    if program is not None:
        try:
            compiled: re.Pattern[AnyStr] = _sre.compile(pattern, *program)
        except (RuntimeError, TypeError, ValueError):  # not a program this interpreter takes
            pass
        else:
            _used[key] = program
            return compiled
    compiled = re.compile(pattern, flags)
    if _PATH is None or not _writable(os.path.dirname(_PATH)):
        return compiled
    program = _program(pattern, int(flags), compiled)
    if program is not None:
        _remember(key, program)
    return compiled


def _program(pattern: AnyStr, flags: int, compiled: re.Pattern[AnyStr]) -> Program | None:
    """What `re.compile` handed `_sre.compile`, when rebuilding from it gives an equal pattern."""
    if _sre is None:
        return None
    try:
        parsed = _parser.parse(pattern, flags)
        code = [int(op) for op in _compiler._code(parsed, flags)]
        groupindex = dict(parsed.state.groupdict)
        indexgroup: list[str | None] = [None] * parsed.state.groups
        for name, index in groupindex.items():
            indexgroup[index] = name
        program = (
            int(flags | parsed.state.flags),
            code,
            parsed.state.groups - 1,
            groupindex,
            tuple(indexgroup),
        )
        again = _sre.compile(pattern, *program)
    except Exception:  # noqa: BLE001 (internals that differ from 3.11's: no memo, re.compile stands)
        return None
    if again != compiled or again.groupindex != compiled.groupindex:
        return None
    return program


def _remember(key: tuple[Any, int], program: Program) -> None:
    global _new
    _used[key] = program
    if not _new:
        _new = True
        atexit.register(_save)


def _save() -> None:
    """Write the memo (what was kept before plus this process's new programs), whole or not at all."""
    if _PATH is None:
        return
    kept = {**_KEPT, **_used}
    blob = marshal.dumps(kept)
    if len(blob) > MAX_BYTES:
        blob = marshal.dumps(_used)
    try:
        os.makedirs(os.path.dirname(_PATH), exist_ok=True, mode=0o700)
        partial = f"{_PATH}.{os.getpid()}"
        with open(partial, "wb") as stream:
            stream.write(blob)
        os.replace(partial, _PATH)
    except OSError:  # a cache that cannot be written: the next process compiles again
        return
