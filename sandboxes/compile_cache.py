"""The compile cache, inside the sandbox (stdlib only, any python3 >= 3.8; compile_worker.py drives it,
compile_deps.py beside it knows what a compile read).

A compile (`... -c SRC -o OBJ`) is looked up by the sha256 of its preprocessed output (`-E`, same flags)
plus its flags (the object path left out) and the compiler binary: identical preprocessed input reuses
the stored exit code, messages and object. Like ccache's direct mode, each compile also records the
files its preprocessor read (from the line markers) with their digests; when they all still read the
same, the stored answer is reused without running the preprocessor at all (a new header that would
shadow an old one on the include path is not noticed: the same limit ccache documents). A success (no
-g) is also found when only line markers moved (a guard added in an included header: the object does
not depend on them), if its warnings, when it printed any, name no file whose content changed.
Anything the cache cannot reason about runs as is.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shlex
import shutil
import tempfile
import time

from sandboxes.compile_deps import (
    atomic_write,
    changed_files,
    compiler_identity,
    depfile_deps,
    direct,
    file_digest,
    in_flight,
    messages_still_true,
    preprocessed_deps,
    read_text,
    remember,
    run_argv,
    written_since,
)
from sandboxes.compile_lines import anchors, moved

TYPE_CHECKING = False  # typing's, not imported in every shim process (compile_worker.py)
if TYPE_CHECKING:
    from sandboxes.compile_deps import Result

__all__ = ["cached_compile", "file_digest", "index_compile", "preprocessed_deps", "run_argv", "split_compile"]

# line markers and blank lines: a preprocessor fills a short gap (a guard's skipped lines) with blank
# lines instead of a marker, and neither changes the tokens the compiler sees
_LINE_MARKER = re.compile(rb"^(?:\s*#\s*(?:line\s+)?\d+[^\n]*|[ \t\r\f\v]*)\n", re.MULTILINE)
_DEBUG = re.compile(r"^-g(\d|gdb|dwarf|line|column|$)")
# flags whose output a cached entry could not reproduce (dependency files, temps, other outputs)
_UNCACHEABLE = ("-M", "-E", "-S", "-save-temps", "--save-temps", "-fsyntax-only", "-###", "-v", "--version")


def split_compile(argv: list[str]) -> tuple[list[str], list[str], str] | None:
    """(key argv, preprocess argv, object path) of a plain one-source compile, else None."""
    if "-c" not in argv or argv.count("-o") != 1 or any(a.startswith("@") for a in argv[1:]):
        return None
    if any(a.startswith(_UNCACHEABLE) for a in argv[1:]):
        return None
    at = argv.index("-o")
    if at + 1 >= len(argv):
        return None
    obj = argv[at + 1]
    rest = argv[:at] + argv[at + 2 :]
    return rest, [a for a in rest if a != "-c"] + ["-E"], obj


def _keys(argv: list[str], preprocessed: bytes) -> tuple[str, str]:
    head = json.dumps([compiler_identity(argv[0]), argv[1:]]).encode()
    exact = hashlib.sha256(head + b"\0" + preprocessed).hexdigest()
    loose = hashlib.sha256(head + b"\0" + _LINE_MARKER.sub(b"", preprocessed)).hexdigest()
    return exact, loose


def _lookup(
    cache: str, exact: str, loose: str, deps: list[list[str]], preprocessed: bytes, cwd: str
) -> tuple[Result | None, str | None, str]:
    """The stored compile of this input (`exact`), else of it with other line markers (`loose`): its
    messages as printed when they still read true, else moved to where their lines are now ("lines
    moved"; compile_lines.py), else none."""
    for name in (exact, read_text(os.path.join(cache, "l", loose))):
        if not name:
            continue
        meta = read_text(os.path.join(cache, "e", name + ".json"))
        if meta:
            found: Result = json.loads(meta)
            if name == exact or messages_still_true(found, deps):
                return found, name, "exact" if name == exact else "line markers only"
            shifted = moved(found, changed_files(found, deps), preprocessed, cwd)
            if shifted is not None:
                return shifted, name, "lines moved"
    return None, None, ""


def _store(
    cache: str,
    exact: str,
    loose: str | None,
    argv: list[str],
    result: Result,
    obj: str,
    deps: list[list[str]] | None = None,
    lines: list[list[object]] | None = None,
) -> None:
    """Keep a compile's answer (and object). `deps`: what it read; with them a success that printed
    warnings is found by its line-marker-free input too, while its warnings name no changed file.
    A compile killed by a signal (a cancelled warm-up, the OOM killer) is no answer and is kept nowhere:
    killed after it wrote its dependency file, it was once stored as a failure with no message.
    `lines`: where its messages point (compile_lines.anchors), so they can follow moved lines."""
    if result["returncode"] < 0:
        return
    os.makedirs(os.path.join(cache, "e"), exist_ok=True)
    os.makedirs(os.path.join(cache, "l"), exist_ok=True)
    if result["returncode"] == 0:
        try:
            shutil.copyfile(obj, os.path.join(cache, "e", exact + ".o.tmp"))
            os.replace(os.path.join(cache, "e", exact + ".o.tmp"), os.path.join(cache, "e", exact + ".o"))
        except OSError:
            return  # no object to keep: do not remember a success we cannot reproduce
    meta: dict[str, object] = {k: result[k] for k in ("returncode", "stdout", "stderr")}
    if deps is not None:
        meta["deps"] = deps
    if lines is not None:
        meta["anchors"] = lines
    atomic_write(os.path.join(cache, "e", exact + ".json"), json.dumps(meta).encode())
    if loose and _reusable_across_line_markers(meta, argv):
        atomic_write(os.path.join(cache, "l", loose), exact.encode())


def _reusable_across_line_markers(meta: Result, argv: list[str]) -> bool:
    """A success without debug info, clean or with the files it read kept (its warnings are then checked
    against what changed when it is found: compile_deps.messages_still_true)."""
    clean = not (meta["stdout"] or meta["stderr"]).strip()
    return (
        meta["returncode"] == 0 and (clean or "deps" in meta) and not any(_DEBUG.match(a) for a in argv[1:])
    )


def _note(cache: str, how: str, argv: list[str]) -> None:
    """One line per cached compile in CACHE/ledger (hit kind or miss, the command): what a build reused."""
    with open(os.path.join(cache, "ledger"), "a", encoding="utf-8") as fh:
        fh.write(f"{how or 'miss'}\t{shlex.join(argv)}\n")


def _reuse(
    cache: str, meta: Result, name: str, how: str, obj_path: str, argv: list[str], started: float
) -> Result:
    """A stored compile's answer, its object copied where this compile writes its own."""
    if meta["returncode"] == 0:
        os.makedirs(os.path.dirname(obj_path) or ".", exist_ok=True)
        shutil.copyfile(os.path.join(cache, "e", name + ".o"), obj_path)
    _note(cache, how, argv)
    answer = {k: v for k, v in meta.items() if k != "deps"}
    return {**answer, "duration_s": time.monotonic() - started, "timed_out": False, "cached": how}


def _depend_compile(
    argv: list[str],
    parts: tuple[list[str], list[str], str],
    cwd: str,
    cache: str,
    timeout: float | None,
    env: dict[str, str] | None,
    obj_path: str,
    started: float,
    key_failure: bool = False,
    warmup: bool = False,
) -> Result:
    """A first compile in a build: no preprocessor pass; the compiler lists what it read (-MD), which is
    what the next identical compile is found by (ccache's depend mode). No line-marker-only reuse.
    `key_failure`: a failed compile (its dependency file deleted with it) is then keyed by its
    preprocessed input, so the same failing tree asked again is answered from the cache. `warmup`: a
    background compile while the run edits the tree: kept only if nothing it read was written meanwhile."""
    key_argv, pre_argv, _ = parts
    wall = time.time()
    fd, depfile = tempfile.mkstemp(prefix="rocport-", suffix=".d")
    os.close(fd)
    try:
        result = run_argv([*argv, "-MD", "-MF", depfile], cwd, timeout, env)
        deps = depfile_deps(depfile, cwd)
    finally:
        # a failed compile takes its outputs with it, the -MF file too (clang deletes them on error)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(depfile)
    if warmup and written_since(deps, cwd, wall):
        deps = []  # compiled from a tree that changed under it: kept nowhere
    if not result["timed_out"] and deps:
        head = json.dumps([compiler_identity(key_argv[0]), key_argv[1:], deps]).encode()
        key = "d" + hashlib.sha256(head).hexdigest()[1:]
        _store(cache, key, None, key_argv, result, obj_path, deps)
        if read_text(os.path.join(cache, "e", key + ".json")):
            remember(cache, key_argv, cwd, deps, key)
    elif key_failure and not result["timed_out"] and result["returncode"] > 0:
        pre = run_argv(pre_argv, cwd, timeout, env)
        if pre["returncode"] == 0:
            exact, loose = _keys(key_argv, pre["_raw_stdout"])
            read = preprocessed_deps(pre["_raw_stdout"], cwd)
            _store(cache, exact, loose, key_argv, result, obj_path, read)
            remember(cache, key_argv, cwd, read, exact)
    _note(cache, "", argv)
    result["duration_s"] = time.monotonic() - started
    return {**result, "cached": ""}


def index_compile(
    argv: list[str], cwd: str, cache: str, timeout: float | None, env: dict[str, str] | None = None
) -> Result:
    """Give a depend-mode build's stored clean compile of this command a preprocessed key too, so it is
    still found once a patch only moves line markers in its input (a macro added to a header it includes).
    Compiles nothing, runs one `-E` at most; asked before a header patch for the header's includers."""
    result: Result = {
        "returncode": 0,
        "stdout": "",
        "stderr": "",
        "duration_s": 0.0,
        "timed_out": False,
        "cached": "",
    }
    parts = split_compile(argv)
    if parts is None or not cache:
        return result
    key_argv, pre_argv, _ = parts
    meta, name = direct(cache, key_argv, cwd)
    if meta is None or name is None:
        return result  # nothing stored
    marker = os.path.join(cache, "e", f"{name}.indexed")
    if not _reusable_across_line_markers(meta, argv) or not name.startswith("d") or os.path.exists(marker):
        return result  # nothing stored, a failure or messages to reproduce, or already keyed by its input
    pre = run_argv(pre_argv, cwd, timeout, env)
    if pre["returncode"] == 0:
        loose = _keys(key_argv, pre["_raw_stdout"])[1]
        messages = meta["stdout"] + meta["stderr"]
        if messages.strip() and "deps" in meta:
            meta["anchors"] = anchors(messages, pre["_raw_stdout"], cwd, meta["deps"])
            atomic_write(os.path.join(cache, "e", name + ".json"), json.dumps(meta).encode())
        atomic_write(os.path.join(cache, "l", loose), name.encode())
        atomic_write(marker, loose.encode())
    result["duration_s"] = pre["duration_s"]
    return result


def cached_compile(
    argv: list[str],
    cwd: str,
    cache: str,
    timeout: float | None,
    env: dict[str, str] | None = None,
    depend: bool = False,
    edited: bool = False,
    warmup: bool = False,
) -> Result:
    """Compile through the cache: a result dict with `cached` ('', 'direct', 'exact', 'lines moved' or 'line markers
    only'). `depend`: a miss compiles at once and records its -MD dependencies (builds), instead of
    keying it by its preprocessed input first (unit checks, whose reuse across patches needs that key).
    `edited`: a unit a patch just edited for this compiler (its ROCm check): no other tree preprocesses
    to the same input, so a miss compiles at once as in `depend`; a failure is keyed by its input.
    `warmup`: as `depend`, for a unit compiled on idle cores ahead of the build (see _depend_compile)."""
    parts = split_compile(argv)
    if parts is None or not cache:
        return {**run_argv(argv, cwd, timeout, env), "cached": ""}
    started = time.monotonic()
    # the same compile running now (a warm-up) is awaited, not redone; a warm-up never waits
    with in_flight(cache, parts[0], cwd, wait=not warmup) as mine:
        if not mine:
            answer = {"returncode": 0, "stdout": "", "stderr": "", "timed_out": False, "cached": "in flight"}
            return {**answer, "duration_s": time.monotonic() - started}
        key_argv, pre_argv, obj = parts
        obj_path = obj if os.path.isabs(obj) else os.path.join(cwd, obj)
        meta, name = direct(cache, key_argv, cwd)
        if meta is not None and name is not None:
            return _reuse(cache, meta, name, "direct", obj_path, argv, started)
        if depend or edited or warmup:
            return _depend_compile(argv, parts, cwd, cache, timeout, env, obj_path, started, edited, warmup)
        pre = run_argv(pre_argv, cwd, timeout, env)
        if pre["returncode"] != 0:  # a preprocessor error is the compile's own result: run it as is
            return {**run_argv(argv, cwd, timeout, env), "cached": ""}
        exact, loose = _keys(key_argv, pre["_raw_stdout"])
        read = preprocessed_deps(pre["_raw_stdout"], cwd)
        meta, name, how = _lookup(cache, exact, loose, read, pre["_raw_stdout"], cwd)
        if meta is not None and name is not None:
            answer = _reuse(cache, meta, name, how, obj_path, argv, started)
            if how == "lines moved":  # kept as this input's own, so a direct hit prints these lines
                _store(cache, exact, loose, key_argv, answer, obj_path, read, meta["anchors"])
                name = exact
            remember(cache, key_argv, cwd, read, name)
            return answer
        result = run_argv(argv, cwd, timeout, env)
        if not result["timed_out"]:
            messages = result["stdout"] + result["stderr"]
            lines = anchors(messages, pre["_raw_stdout"], cwd, read) if messages.strip() else None
            _store(cache, exact, loose, key_argv, result, obj_path, read, lines)
            if read_text(os.path.join(cache, "e", exact + ".json")):
                remember(cache, key_argv, cwd, read, exact)
            _note(cache, "", argv)
        result["duration_s"] = time.monotonic() - started
        return {**result, "cached": ""}
