"""Where a stored compile's messages point, so a warning still reads true after its lines moved (stdlib
only, any python3 >= 3.8: it runs in the sandbox, beside compile_cache.py).

A compile found by its line-marker-free input (a guard added above a warning's line) produced the same
object, but its stored warnings name the old line numbers. When it is stored, each `file:line` its
messages name is anchored: the line of the marker-free preprocessed text that line became, and the
source line itself. When it is found again, the new line markers say which line each anchor came from
now; where that line reads as before, the message is rewritten with the new number. A reference this
cannot follow (a line the preprocessor left out, a format not read here, a source line that differs)
leaves the messages unmovable, and the compile runs again, as it did before anchors.

Read forms: `file:12:3:` and `file:12,` (gcc, clang, "In file included from"), `file(12)` (nvcc's
front end), `at line 12 of file` and `at line 12` (its instantiation context; the file of the message
before), and the `   12 | code` gutter gcc and clang print under a location.
"""

from __future__ import annotations

import os
import re

TYPE_CHECKING = False  # typing's, not imported in every shim process (compile_worker.py)
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

_MARKER = re.compile(rb'\s*#\s*(?:line\s+)?(\d+)(?:\s+"((?:[^"\\]|\\.)*)")?')
_REF = re.compile(
    r"""(?P<file>[^\s:()'"`,]+)(?:\((?P<paren>\d+)\)|:(?P<colon>\d+)(?=[:,]))"""
    r"|at line (?P<at>\d+)(?: of (?P<atfile>[^\s:()'\"`,]+))?"
    r"|^(?P<pad> *)(?P<gutter>\d+)(?= \| )",
    re.MULTILINE,
)


def _origins(preprocessed: bytes) -> Iterator[tuple[int, str, int]]:
    """(line of the text without markers and blank lines, file, line in that file) for each line the
    preprocessor wrote with something on it (the cache's line-marker-free key drops the same lines)."""
    name, line, index = "", 0, 0
    for raw in preprocessed.split(b"\n"):
        stripped = raw.strip()
        marker = _MARKER.match(raw) if stripped.startswith(b"#") else None
        if marker:  # `# 12 "file" 2`, or `#line 12` (the same file)
            name = name if marker.group(2) is None else marker.group(2).decode("utf-8", "replace")
            line = int(marker.group(1))
            continue
        if stripped:
            yield index, name, line
            index += 1
        line += 1


def _refs(text: str) -> Iterator[tuple[re.Match[str], str, int]]:
    """Each reference to a source line in `text`: (match, file as written, line). A gutter line and a
    file-less `at line 6` belong to the message they are under: the last location that starts a line
    ("" before any, which no anchor matches)."""
    primary = ""
    for m in _REF.finditer(text):
        if m.group("gutter") is not None or (m.group("at") is not None and m.group("atfile") is None):
            yield m, primary, int(m.group("gutter") or m.group("at"))
            continue
        name = m.group("file") or m.group("atfile")
        if m.group("file") and (m.start() == 0 or text[m.start() - 1] == "\n"):
            primary = name
        yield m, name, int(m.group("paren") or m.group("colon") or m.group("at"))


def _inside(cwd: str, name: str) -> str | None:
    """The real path of `name` when it is inside the work tree `cwd` (only those files change during a
    run); None for one outside it, a link out of it included (a marker may name any file on the machine)."""
    path = os.path.realpath(name if os.path.isabs(name) else os.path.join(cwd, name))
    return path if path.startswith(os.path.realpath(cwd) + os.sep) else None


def _source_line(cwd: str, name: str, line: int) -> str | None:
    path = _inside(cwd, name)
    if path is None:
        return None
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for number, text in enumerate(fh, 1):
                if number == line:
                    return text.rstrip("\r\n")
    except OSError:
        return None
    return None


def anchors(messages: str, preprocessed: bytes, cwd: str, deps: list[list[str]]) -> list[list[Any]] | None:
    """[file, line, marker-free line, source text] for each line `messages` name in a work-tree file the
    compile read (a system header's lines do not move during a run); None when one cannot be anchored
    (then the messages can never be moved)."""
    read = {os.path.normpath(str(n)) for n, _ in deps}
    wanted = {
        (os.path.normpath(f), n): f
        for _, f, n in _refs(messages)
        if os.path.normpath(f) in read and _inside(cwd, f) is not None
    }
    found: dict[tuple[str, int], int] = {}
    for index, name, line in _origins(preprocessed) if wanted else ():
        key = (os.path.normpath(name), line)
        if key in wanted and key not in found:
            found[key] = index
            if len(found) == len(wanted):
                break  # the rest of a megabyte-long text is not read
    out = []
    for key, spelled in wanted.items():
        source = _source_line(cwd, spelled, key[1])
        if key not in found or source is None:
            return None
        out.append([spelled, key[1], found[key], source])
    return out


def moved(found: dict[str, Any], changed: set[str], preprocessed: bytes, cwd: str) -> dict[str, Any] | None:
    """`found`'s stdout and stderr with the line numbers in `changed` files (normalized names) moved to
    where their source lines are now, and its anchors with them; None when any cannot be moved."""
    if found.get("anchors") is None:
        return None
    needed = {
        index for spelled, _, index, _ in found["anchors"] if _touched(os.path.normpath(spelled), changed)
    }
    now: dict[int, tuple[str, int]] = {}
    for index, name, line in _origins(preprocessed) if needed else ():
        if index in needed:
            now[index] = (os.path.normpath(name), line)
            if len(now) == len(needed):
                break
    moves: dict[tuple[str, int], int] = {}
    for spelled, line, index, source in found["anchors"]:
        name = os.path.normpath(spelled)
        if not _touched(name, changed):
            continue
        there = now.get(index)
        if there is None or there[0] != name or _source_line(cwd, spelled, there[1]) != source:
            return None
        moves[(name, line)] = there[1]
    out = dict(found)
    for stream in ("stdout", "stderr"):
        text = _rewrite(found[stream] or "", moves, changed)
        if text is None:
            return None
        out[stream] = text
    out["anchors"] = [[f, moves.get((os.path.normpath(f), n), n), i, s] for f, n, i, s in found["anchors"]]
    return out


def _touched(name: str, changed: set[str]) -> bool:
    """Whether `name` may be one of the changed files (by its last component: a message may spell a
    file otherwise than the line markers do, and a number left stale must not slip through)."""
    return os.path.basename(name) in {os.path.basename(c) for c in changed}


def _rewrite(text: str, moves: dict[tuple[str, int], int], changed: set[str]) -> str | None:
    pieces, at = [], 0
    for m, spelled, line in _refs(text):
        key = (os.path.normpath(spelled), line)
        if spelled and not _touched(key[0], changed):
            continue
        if key not in moves:
            return None
        group = next(g for g in ("paren", "colon", "at", "gutter") if m.group(g) is not None)
        start, end = m.span(group)
        number = str(moves[key])
        if group == "gutter":  # right-aligned under the same margin
            number = number.rjust(len(m.group("pad")) + len(m.group("gutter")))
            start = m.start("pad")
        pieces += [text[at:start], number]
        at = end
    pieces.append(text[at:])
    rest = _REF.sub("", text)
    if re.search(r"\bline \d", rest):
        return None  # a line named in a form not read here: it cannot be followed
    for name in {os.path.basename(c) for c in changed}:
        if re.search(re.escape(name) + r"\W{1,3}\d", rest):
            return None
    return "".join(pieces)
