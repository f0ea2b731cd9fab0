"""`rocport scan ...` started without typer: the options parsed from scan_options.py's table.

typer 0.29 and the pydantic it coerces every option through cost ~70 ms of CPU, more than a scan
of vLLM's csrc. A process started as `rocport scan` first tries this parser. It takes only the plain
spellings (`--opt VALUE`, `--opt=VALUE`, `-o VALUE`, flags, one PATH) with values it can check
exactly as click does; for anything else (--help, an unknown or repeated option, a bad or missing
value, a cluster like `-pvllm`, shell completion) it answers None and typer parses the whole
command line, so help and every usage error read as they always did.
"""

from __future__ import annotations

import atexit
import errno
import gc
import os
import sys

from agent.cli.scan_options import OPTIONS, ScanOption
from tools.files import path_text

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (tools/__init__.py)
if TYPE_CHECKING:
    from typing import Any, NoReturn

_BY_FLAG: dict[str, ScanOption] = {}
for _opt in OPTIONS:
    for _flag in (*_opt.flags, *((_opt.off,) if _opt.off else ())):
        _BY_FLAG[_flag] = _opt

COMPLETION_VARIABLE = "_ROCPORT_COMPLETE"
"""Set by a shell asking typer for completions: typer answers."""


def _value(opt: ScanOption, text: str) -> Any:
    """The option's value from `text`, or None when click would have to judge it."""
    if not text or text.startswith("-"):
        return None
    if opt.minimum is not None:
        if not (text.isascii() and text.isdigit()) or int(text) < opt.minimum:
            return None
        return int(text)
    if opt.choices and text not in opt.choices:
        return None
    return path_text(text) if opt.is_path else text  # as typer hands the command a Path


def parse_scan_args(args: list[str]) -> dict[str, Any] | None:
    """`rocport scan`'s arguments (after `scan`) as the scan's keyword arguments, or None: typer
    must parse them (help, completion, anything unusual or wrong)."""
    values: dict[str, Any] = {opt.dest: opt.default for opt in OPTIONS}
    seen: set[str] = set()
    path: str | None = None
    rest = iter(args)
    for arg in rest:
        if not arg.startswith("-") or arg == "-":
            if path is not None or arg in ("", "-"):
                return None
            path = arg
            continue
        name, eq, inline = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        opt = _BY_FLAG.get(name)
        if opt is None:  # --help, --, an unknown option, -pvllm: typer's to parse or refuse
            return None
        if opt.kind in ("flag", "switch"):
            if eq:
                return None
            value: Any = name != opt.off
        else:
            value = _value(opt, inline if eq else next(rest, ""))
            if value is None:
                return None
        if opt.kind == "many":
            values[opt.dest] = [*(values[opt.dest] or []), value]
            continue
        if opt.dest in seen:  # click keeps the last; typer's parser says so, not this one
            return None
        seen.add(opt.dest)
        values[opt.dest] = value
    if path is None:
        return None
    return {"path": path_text(path), **values}


def run_scan_without_typer(args: list[str]) -> None:
    """Run `rocport scan` and exit when the arguments parse here; return (to let typer run the
    command) when they do not. Ends as the typer command does: exit 0, 1 (findings) or 2 with one
    `rocport: error:` line; Ctrl-C exits 130."""
    if COMPLETION_VARIABLE in os.environ:
        return
    parsed = parse_scan_args(args)
    if parsed is None:
        return
    # A process that scans once and exits: the cyclic collector would only walk the modules being
    # imported, again and again (~5 ms of CPU); the scan itself already runs without it (repo.py).
    gc.disable()
    from agent.cli.scan_output import ScanUsageError, echo
    from agent.cli.scan_run import scan_exit_status

    try:
        status = scan_exit_status(**parsed)
    except ScanUsageError as exc:
        echo(f"rocport: error: {exc}", err=True)
        status = 2
    except KeyboardInterrupt:
        status = 130
    except OSError as exc:
        if exc.errno != errno.EPIPE:
            raise
        _quiet_broken_pipe()
        status = 1
    _exit_without_teardown(status)


def _exit_without_teardown(status: int) -> NoReturn:
    """Exit as sys.exit does, minus freeing every module and object one by one (~9 ms of CPU after a
    scan of vLLM's csrc; the OS takes the memory back at once): atexit handlers run (coverage, a
    user's hooks) and stdout and stderr are flushed first. With another thread running, or a stream
    that cannot be flushed (a closed pipe), the normal exit handles it as it always did."""
    threading = sys.modules.get("threading")
    if threading is not None and threading.active_count() > 1:
        sys.exit(status)
    atexit._run_exitfuncs()
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):
        sys.exit(status)
    os._exit(status)


def _quiet_broken_pipe() -> None:
    """What click does when stdout's reader went away: no second error when Python flushes at exit."""
    from typer._click.utils import PacifyFlushWrapper

    sys.stdout = PacifyFlushWrapper(sys.stdout)
    sys.stderr = PacifyFlushWrapper(sys.stderr)
