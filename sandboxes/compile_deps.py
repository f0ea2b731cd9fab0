"""What a compile read, and how one runs, for the compile cache (stdlib only, any python3 >= 3.8: it runs
in the sandbox).

A compile is found again without running its preprocessor when every file it read still reads the same
(ccache's direct mode): the files come from the preprocessed output's line markers or from the compiler's
own `-MD` dependency file, each with a digest (`file_digest`). Per compile command a manifest keeps the
last few such dependency lists with the stored compile each one led to.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

TYPE_CHECKING = False  # typing's, not imported in every shim process (compile_worker.py)
if TYPE_CHECKING:
    from typing import Any, TypeAlias

    Result: TypeAlias = dict[str, Any]
    """A compile's answer as the worker writes it: returncode, stdout, stderr, duration_s, timed_out,
    cached (JSON across the spool; `_raw_stdout` bytes too while inside the sandbox)."""

_MARKER_FILE = re.compile(rb'^\s*#\s*(?:line\s+)?\d+\s+"((?:[^"\\]|\\.)*)"', re.MULTILINE)
MANIFEST_ENTRIES = 8
OUTPUT_CAP = 2_000_000
CANCEL_WARMUPS = "cancel-warmups"
"""The file (in the service's spool) that tells it to drop every warm-up asked so far; `cancel-warmups-ID`
files hold a JSON list of units whose warm-ups are dropped (a patch changed what they read)."""
PROMOTE_WARMUPS = "promote-warmups"
"""The file that tells the service a build starts: warm-ups not started are dropped (the build compiles
those units itself), those running finish and the build waits for them (see in_flight)."""


@contextlib.contextmanager
def in_flight(cache: str, key_argv: list[str], cwd: str, wait: bool = True) -> Any:
    """Held while one compile command (its output path left out) is looked up, compiled and stored: the
    same compile asked meanwhile (a build reaching a unit a warm-up is compiling) waits for it and is then
    answered from the cache instead of compiling the unit a second time. Yields False, holding nothing,
    when `wait` is False and the compile is running elsewhere (a warm-up has nothing to add then)."""
    import fcntl  # POSIX only, as the sandboxes are

    lock_dir = os.path.join(cache, "lock")
    os.makedirs(lock_dir, exist_ok=True)
    # the same command in another folder is another compile
    with open(os.path.join(lock_dir, _command_name(key_argv, cwd)), "a+b") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def run_argv(argv: list[str], cwd: str, timeout: float | None, env: dict[str, str] | None = None) -> Result:
    """Run argv in its own process group; the group is killed on timeout. Returns a result dict."""
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    except OSError as exc:
        return {
            "returncode": 127,
            "stdout": "",
            "stderr": f"{argv[0]}: {exc.strerror}\n",
            "duration_s": 0.0,
            "timed_out": False,
        }
    timed_out = False
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
    return {
        "returncode": 124 if timed_out else proc.returncode,
        "stdout": out[-OUTPUT_CAP:].decode("utf-8", "replace"),
        "stderr": err[-OUTPUT_CAP:].decode("utf-8", "replace"),
        "duration_s": time.monotonic() - started,
        "timed_out": timed_out,
        "_raw_stdout": out,
    }


def atomic_write(path: str, data: bytes) -> None:
    """Write `data` to `path` so that a reader sees the old file or the whole new one."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)


def read_text(path: str) -> str:
    """The file's text, "" when it cannot be read (not there yet)."""
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except OSError:
        return ""


def compiler_identity(name: str) -> str:
    """Where the compiler binary is and which build of it (path, size, mtime)."""
    path = shutil.which(name) or name
    try:
        st = os.stat(path)
        return f"{os.path.realpath(path)}:{st.st_size}:{int(st.st_mtime)}"
    except OSError:
        return path


def file_digest(path: str, cwd: str) -> str:
    """What a dependency is now: its content hash inside the work tree (patches land there), else size
    and mtime (system headers do not change during a run)."""
    full = path if os.path.isabs(path) else os.path.join(cwd, path)
    try:
        if os.path.realpath(full).startswith(os.path.realpath(cwd) + os.sep):
            with open(full, "rb") as fh:
                return hashlib.sha256(fh.read()).hexdigest()
        st = os.stat(full)
        return f"{st.st_size}:{st.st_mtime_ns}"
    except OSError:
        return "missing"


def preprocessed_deps(preprocessed: bytes, cwd: str) -> list[list[str]]:
    """Every file the preprocessor read, from its line markers, with its digest."""
    names = {m.group(1).decode("utf-8", "replace") for m in _MARKER_FILE.finditer(preprocessed)}
    return sorted([n, file_digest(n, cwd)] for n in names if not n.startswith("<"))


def depfile_deps(path: str, cwd: str) -> list[list[str]]:
    """The dependencies a `-MD -MF` file lists (the object's rule), with their digests."""
    text = read_text(path).replace("\\\n", " ")
    names = re.split(r"(?<!\\)\s+", text.split(":", 1)[1].strip()) if ":" in text else []
    return sorted([n.replace("\\ ", " "), file_digest(n.replace("\\ ", " "), cwd)] for n in set(names) if n)


def _manifest_path(cache: str, key_argv: list[str]) -> str:
    """Where a command's manifest is: by compiler and flags, not by the folder it ran in. Its entries'
    relative names are read again in the folder of the compile that looks them up, so a run whose tree
    sits elsewhere (another run, with the cache shared: sandboxes/compile_share.py) finds a compile of
    the same files; an absolute name inside the old tree no longer reads as it did and misses."""
    return os.path.join(cache, "m", _command_name(key_argv) + ".json")


def _command_name(key_argv: list[str], *where: str) -> str:
    """A file name for one compile command: the compiler by what it is, not its path, then its flags."""
    return hashlib.sha256(
        json.dumps([compiler_identity(key_argv[0]), key_argv[1:], *where]).encode()
    ).hexdigest()


def written_since(deps: list[list[str]], cwd: str, since: float) -> bool:
    """True when a file a compile read was written at or after `since` (wall clock, with the file
    clock's coarse tick allowed for): the tree changed under a warm-up compile, whose object then
    matches neither the old digests nor the new, so it must not be kept."""
    for name, _ in deps:
        try:
            if os.stat(name if os.path.isabs(name) else os.path.join(cwd, name)).st_mtime >= since - 0.05:
                return True
        except OSError:
            return True
    return False


def direct(cache: str, key_argv: list[str], cwd: str) -> tuple[Result | None, str | None]:
    """The stored compile whose recorded inputs all still read the same (no preprocessor run), else None."""
    text = read_text(_manifest_path(cache, key_argv))
    for entry in json.loads(text) if text else []:
        if all(file_digest(name, cwd) == digest for name, digest in entry["deps"]):
            meta = read_text(os.path.join(cache, "e", entry["exact"] + ".json"))
            if meta:
                found: Result = json.loads(meta)
                return found, entry["exact"]
    return None, None


def remember(cache: str, key_argv: list[str], cwd: str, deps: list[list[str]], exact: str) -> None:
    """Record which files this compile read, so the next identical one skips the preprocessor."""
    os.makedirs(os.path.join(cache, "m"), exist_ok=True)
    path = _manifest_path(cache, key_argv)
    text = read_text(path)
    entries = [e for e in (json.loads(text) if text else []) if e["exact"] != exact]
    entries.insert(0, {"deps": deps, "exact": exact})
    atomic_write(path, json.dumps(entries[:MANIFEST_ENTRIES]).encode())


def messages_still_true(found: Result, deps: list[list[str]]) -> bool:
    """A stored compile found by its line-marker-free input: its messages (warnings) still read true when
    they name no file whose content changed since (their line numbers moved only in changed files)."""
    text = (found["stdout"] or "") + (found["stderr"] or "")
    if not text.strip():
        return True
    if "deps" not in found:
        return False
    return not any(n in text or os.path.basename(n) in text for n in changed_files(found, deps))


def changed_files(found: Result, deps: list[list[str]]) -> set[str]:
    """The files (normalized names) a stored compile read that read otherwise in `deps`, or not at all."""
    # a dependency file and line markers may spell one header differently (`rocprim/device/../detail`)
    old: dict[str, str] = {os.path.normpath(str(n)): str(d) for n, d in found.get("deps", [])}
    new: dict[str, str] = {os.path.normpath(str(n)): str(d) for n, d in deps}
    return {n for n in old.keys() | new.keys() if old.get(n) != new.get(n)}
