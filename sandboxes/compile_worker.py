"""The warm compile service's inside half: runs in the sandbox (stdlib only, any python3 >= 3.8).

    python3 compile_worker.py serve SPOOL            # answer requests written to SPOOL/req
    python3 compile_worker.py shim NAME ARGS...      # stand in for NAME on PATH (a build's hipcc)

Both go through compile_cache.py (copied with compile_deps.py into `sandboxes/` beside this file, the
package the host knows them by): see there how a compile is looked up.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import sys
import time

# sandboxes/compile_cache.py and compile_deps.py, copied beside this file (the host's package shadowed)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from sandboxes.compile_cache import cached_compile, index_compile, run_argv, split_compile
from sandboxes.compile_deps import CANCEL_WARMUPS, PROMOTE_WARMUPS, atomic_write, read_text

TYPE_CHECKING = False  # typing's, not imported in every shim process (a compile of a build each)
if TYPE_CHECKING:
    from typing import Any

    from sandboxes.compile_deps import Result

_SHELL = set("|&;<>()$`\\\"'*?[]#~=%!{}")


def plain_argv(cmd: str) -> list[str] | None:
    """The argv of a shell command with no shell syntax in it, else None (it runs through bash)."""
    try:
        argv = shlex.split(cmd)
    except ValueError:
        return None
    if not argv or any(set(a) & _SHELL and not a.startswith("-") for a in argv):
        return None
    return argv


def handle(request: dict[str, Any], cache: str) -> Result:
    """One request: {cmd, cwd, env, timeout, cache, mode} -> a result dict (no raw bytes). mode: "" (key
    by preprocessed input), "depend" (compile at once, as a build), "edited" (at once, a failure keyed by
    its input), "index" (key a build's compile), "warmup" (as depend, on idle cores, see serve)."""
    env = {**os.environ, **(request.get("env") or {})}
    argv = plain_argv(request["cmd"])
    mode = request.get("mode", "")
    if argv is not None and mode == "index":
        result = index_compile(argv, request["cwd"], cache, request["timeout"], env)
    elif argv is not None and request.get("cache", True):
        depend, edited, warmup = mode == "depend", mode == "edited", mode == "warmup"
        result = cached_compile(argv, request["cwd"], cache, request["timeout"], env, depend, edited, warmup)
    else:
        result = run_argv(["bash", "-c", request["cmd"]], request["cwd"], request["timeout"], env)
        result["cached"] = ""
    result.pop("_raw_stdout", None)
    return result


def _idle_priority() -> None:
    """A warm-up thread's compilers run at the lowest priority (nice is per thread on Linux and children
    inherit it): they take only the cores the run's own compiles leave idle."""
    os.nice(19)


def serve(spool: str) -> None:
    """Answer requests (SPOOL/req/ID.json -> SPOOL/res/ID.json) in parallel, up to the cores. Warm-up
    requests (`warmup` in their name: units the build will need, asked for ahead of it) go to a pool of
    their own whose compilers run at nice 19, so a unit check is never queued behind them. Control files
    in the spool: CANCEL_WARMUPS drops those not started and kills those running (the run ends); a
    `cancel-warmups-ID` file does so for the units it lists (a patch is about to change what they read);
    PROMOTE_WARMUPS drops those not started and lets those running finish (a build starts, and waits for
    them through the cache's in-flight lock rather than compile those units a second time)."""
    req, res, cache = (os.path.join(spool, d) for d in ("req", "res", "cache"))
    for d in (req, res, cache):
        os.makedirs(d, exist_ok=True)
    # Every request ever taken stays in `taken` (ids are unique): a listing made just before a quick
    # request finished still names it, and taking it again answered it a second time with exit 125
    # (its file was gone), overwriting the real answer before the host read it.
    taken: set[str] = set()

    def work(name: str) -> None:
        path = os.path.join(req, name)
        try:
            request = json.loads(read_text(path))
            result = handle(request, cache)
        except Exception as exc:  # noqa: BLE001 - a bad request is an answer, never the end of the service
            result = {
                "returncode": 125,
                "stdout": "",
                "stderr": f"compile service: {exc!r}\n",
                "duration_s": 0.0,
                "timed_out": False,
                "cached": "",
            }
        atomic_write(os.path.join(res, name), json.dumps(result).encode())
        os.unlink(path)

    warm: dict[str, Any] = {"generation": 0, "dropped": set()}  # what a cancel or a promotion dropped

    def warm_up(name: str, generation: int) -> None:
        path = os.path.join(req, name)
        try:
            unit = json.loads(read_text(path)).get("unit")
        except (OSError, ValueError):
            unit = None
        if generation == warm["generation"] and unit not in warm["dropped"]:
            work(name)
        else:
            with contextlib.suppress(OSError):
                os.unlink(path)

    atomic_write(os.path.join(spool, "ready"), str(os.getpid()).encode())
    # Started by its owner directly (exec): a new parent means the owner died without closing us
    # (kill -9, a crash), and nobody will ask again. In a container the container's end does this.
    owner = os.getppid()
    idle = 0.02
    # here, not at the top: a shim (one per compile of a build) needs no pool, and the import brings
    # logging and traceback (on Python 3.14 `_colorize` and `dataclasses` too), ~25 ms a process
    from concurrent.futures import ThreadPoolExecutor

    cores = max(2, os.cpu_count() or 2)
    pool = ThreadPoolExecutor(cores)
    # half as many warm-ups as cores (two at least): idle cores fill without doubling a big build's memory
    idle_pool = ThreadPoolExecutor(max(2, cores // 2), initializer=_idle_priority)
    try:
        while os.path.isdir(req) and os.getppid() == owner:
            _control(spool, warm)
            fresh = [n for n in sorted(os.listdir(req)) if n.endswith(".json") and n not in taken]
            for name in fresh:
                taken.add(name)
                if "warmup" in name:
                    idle_pool.submit(warm_up, name, warm["generation"])
                else:
                    pool.submit(work, name)
            # quick while requests come, a few wake-ups a second when the run is elsewhere (a build)
            idle = 0.02 if fresh else min(idle * 1.5, 0.25)
            time.sleep(idle)
    finally:
        warm["generation"] += 1
        _idle_compiles(kill=True)
        idle_pool.shutdown()
        pool.shutdown()


def _control(spool: str, warm: dict[str, Any]) -> None:
    """Act on the control files the host left in the spool (see serve), each once."""
    names = sorted(n for n in os.listdir(spool) if n.startswith((CANCEL_WARMUPS, PROMOTE_WARMUPS)))
    for name in names:
        path = os.path.join(spool, name)
        if name == CANCEL_WARMUPS:
            warm["generation"] += 1
            _idle_compiles(kill=True)
        elif name == PROMOTE_WARMUPS:
            warm["generation"] += 1
            _idle_compiles(kill=False)
        else:
            try:
                units = set(json.loads(read_text(path)))
            except (OSError, ValueError, TypeError):
                units = set()
            warm["dropped"] |= units
            _idle_compiles(kill=True, units=units)
        with contextlib.suppress(OSError):
            os.unlink(path)


def _idle_compiles(kill: bool, units: set[str] | None = None) -> None:
    """The warm-up compiles running now, this process's children at nice 19 (each leads its own process
    group, run_argv's new session, so the compiler's own children go with it), killed (only those whose
    command names one of `units`, when given), or else asked back to normal priority: that needs
    CAP_SYS_NICE or RLIMIT_NICE, which a container rarely has; without it they finish at nice 19 on the
    cores the build leaves idle while it waits for them."""
    me = str(os.getpid())
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()  # from field 3 (state) on: ppid [1], nice [16]
            if len(fields) <= 16 or fields[1] != me or fields[16] != "19":
                continue
            if units is not None:
                with open(f"/proc/{pid}/cmdline", "rb") as fh:
                    if not units.intersection(fh.read().decode("utf-8", "replace").split("\0")):
                        continue
        except (OSError, IndexError):
            continue
        with contextlib.suppress(OSError):
            if kill:
                os.killpg(int(pid), signal.SIGKILL)
            else:
                os.setpriority(os.PRIO_PGRP, int(pid), 0)


def shim(name: str, args: list[str]) -> int:
    """Stand in for compiler NAME (found on PATH after this shim's folder) with the cache around it."""
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin")
    path = os.pathsep.join(
        p for p in os.environ.get("PATH", "").split(os.pathsep) if os.path.abspath(p) != here
    )
    # the compiler a build named before the shim took its place (HIPCC=/opt/rocm/bin/hipcc), else PATH's
    real = os.environ.get("ROCPORT_REAL_" + name.upper()) or shutil.which(name, path=path)
    if real is None:
        sys.stderr.write(f"rocport compile cache: no {name} on PATH\n")
        return 127
    os.environ["PATH"] = path
    cache = os.environ.get("ROCPORT_COMPILE_CACHE", "")
    if not cache or split_compile([real, *args]) is None:  # a link, a dependency scan: the compiler itself
        os.execv(real, [real, *args])  # noqa: S606 - become the real compiler, argv as the build gave it
    # a build's compiles go by what they read (-MD, no preprocessor pass); keyed by their preprocessed
    # input instead, a unit whose input only moved line markers is found (write_spool's key_by_input)
    depend = os.environ.get("ROCPORT_COMPILE_KEY") != "input"
    result = cached_compile([real, *args], os.getcwd(), cache, timeout=None, depend=depend)
    sys.stdout.write(result["stdout"])
    sys.stderr.write(result["stderr"])
    returncode: int = result["returncode"]
    return returncode


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2])
    elif sys.argv[1] == "shim":
        sys.exit(shim(sys.argv[2], sys.argv[3:]))
