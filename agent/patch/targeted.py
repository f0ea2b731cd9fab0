"""Whether a fix removed the failure it targeted: the same error reported again in another file is the
next failure the fix unmasked, not the targeted one."""

from __future__ import annotations

import re

from tools.records import Failure

_ERROR_AT = re.compile(r"^\s*(?P<path>[^\s:][^:]*):\d+(?::\d+)?:\s*(?:fatal\s+)?error\b")


def failure_gone(failure: Failure | None, output: str, touched: tuple[str, ...] | list[str] = ()) -> bool:
    """True when no error line of the compiler output mentions the failure's symbol (or message) in the
    failure's own file or a file the patch touched. The same symbol failing at `path:line: error` in
    another file is the next failure the fix unmasked (a second header of the closure including
    <cuda.h>), not the targeted one: that goes to the next wave."""
    if failure is None:
        return True
    needle = failure.symbol or failure.message
    errors = [ln for ln in output.splitlines() if "error" in ln or "fatal" in ln]
    hits = [ln for ln in errors if needle and needle in ln]
    if not hits or not failure.file:
        return not hits
    mine = (failure.file, *touched)
    for ln in hits:
        at = _ERROR_AT.match(ln)
        path = at["path"].removeprefix("./") if at else ""
        if not path or any(path == f or path.endswith("/" + f) for f in mine):
            return False  # where it was, in a file the patch changed, or a line that names no file
    return True
