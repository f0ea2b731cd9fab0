"""Give a diff the line ends of the files it patches, so a CRLF source takes a patch and stays CRLF.

Rules and the LLM read sources as text with universal newlines, so their diffs end every line in LF; a file
written on Windows ends them in CRLF, and `git apply` then finds no context ("patch does not apply"). Before a
diff is applied (or reverted), each hunk line the file already holds takes that line's own end, and each line
the diff adds takes the end most of the file's lines have. The file's line ends are never converted: a CRLF
file stays CRLF, an LF file and the LF lines of a mixed file stay LF.
"""

from __future__ import annotations

import re
from pathlib import Path

from tools.files import read_regular

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_NO_EOL = "\\ No newline at end of file"


def _lines(text: str) -> list[str]:
    """Lines split at LF only, ends kept (str.splitlines would also split at a lone CR or a form feed)."""
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def _sections(diff: str) -> list[list[str]]:
    """The diff's lines grouped per file: a group starts at `diff --git`, or at `--- ` outside a hunk (a hunk
    ends when its header's line counts are used up, so a removed line reading `-- x` stays in its hunk)."""
    groups: list[list[str]] = [[]]
    old_left = new_left = 0
    for line in _lines(diff):
        in_hunk = old_left > 0 or new_left > 0
        starts = line.startswith("diff --git ") or (line.startswith("--- ") and not in_hunk)
        if starts and any(not ln.startswith("diff --git ") for ln in groups[-1]):
            groups.append([])
        m = _HUNK.match(line)
        if m and not in_hunk:
            old_left, new_left = int(m.group(2) or 1), int(m.group(4) or 1)
        elif in_hunk and line[:1] in " -":
            old_left -= 1
            new_left -= line[:1] == " "
        elif in_hunk and line[:1] == "+":
            new_left -= 1
        groups[-1].append(line)
    return [g for g in groups if g]


def _target(section: list[str]) -> str | None:
    """The repo path the section patches (its `+++ b/` path, else its `--- a/` path)."""
    for prefix in ("+++ ", "--- "):
        for line in section:
            if line.startswith(prefix):
                raw = line[len(prefix) :].split("\t", 1)[0].strip()
                if raw != "/dev/null":
                    return raw[2:] if raw.startswith(("a/", "b/")) else raw
    return None


def _crlf(line: str) -> str:
    return line if line.endswith("\r\n") or not line.endswith("\n") else line[:-1] + "\r\n"


def _rewrite(section: list[str], ends: list[bool], dominant_crlf: bool, reverse: bool) -> list[str]:
    """The section with its hunk lines ending as the file's lines do; `ends[i]`: file line i ends in CRLF."""
    present = (" ", "+") if reverse else (" ", "-")
    out: list[str] = []
    pos = -1  # index of the file line the next present-side hunk line is; -1 outside hunks
    for k, line in enumerate(section):
        m = _HUNK.match(line)
        if m:
            pos = int(m.group(3 if reverse else 1)) - 1
            pos = max(pos, 0)
            out.append(line)
            continue
        if pos < 0 or not line or line[0] not in " +-":
            out.append(line)
            continue
        no_eol = k + 1 < len(section) and section[k + 1].startswith(_NO_EOL)
        if line[0] in present:
            crlf = ends[pos] if pos < len(ends) else dominant_crlf
            pos += 1
        else:
            crlf = dominant_crlf
        out.append(_crlf(line) if crlf and not no_eol else line)
    return out


def match_line_ends(root: Path, diff: str, reverse: bool = False) -> str:
    """`diff` with the line ends of the files under `root` it patches (`reverse`: the files hold the diff's
    new side, as before `git apply -R`); unchanged for files with no CRLF, new files and unreadable ones."""
    if not diff.strip():
        return diff
    out: list[str] = []
    for section in _sections(diff):
        rel = _target(section)
        data = b""
        if rel is not None:
            try:
                data = read_regular(Path(root) / rel)
            except (OSError, ValueError):
                data = b""
        if b"\r\n" not in data:
            out.extend(section)
            continue
        lines = data.split(b"\n")
        ends = [ln.endswith(b"\r") for ln in lines[:-1]]  # the last piece follows the last LF: no end
        out.extend(_rewrite(section, ends, 2 * sum(ends) >= len(ends), reverse))
    return "".join(out)
