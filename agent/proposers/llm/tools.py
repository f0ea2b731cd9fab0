"""The tools an LLM may call while fixing one failure. Every path stays inside the repo.

The model and the repo are both untrusted: a path never names `.git`, never goes through a
symlink (a committed `env_link -> /proc/self/environ` must not be read), only regular files are
opened, edits are capped, and any exception a tool raises comes back as an `error: ...` result.
"""

from __future__ import annotations

import fnmatch
import os
import re
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from agent.proposers.llm.editblocks import apply_edit

MAX_READ_LINES = 400
MAX_GREP_HITS = 60
MAX_EDIT_BYTES = 1 << 20
"""An edit (search + replace) and a proposal's diff are at most 1 MiB: no real fix is bigger."""
MAX_FILE_BYTES = 8 << 20
"""Files larger than this are not read (generated tables, blobs): the model gets an error."""
MAX_PATTERN_CHARS = 500


def _fn(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


_S = {"type": "string"}
_I = {"type": "integer"}
TOOL_SCHEMAS = [
    _fn(
        "read_file",
        "Read lines of a repo file (1-based, inclusive).",
        {"path": _S, "start_line": _I, "end_line": _I},
        ["path"],
    ),
    _fn(
        "grep",
        "Search the repo with a regular expression; optional glob filters file names.",
        {"pattern": _S, "glob": _S},
        ["pattern"],
    ),
    _fn("list_dir", "List a repo directory.", {"path": _S}, ["path"]),
    _fn(
        "propose_edit",
        "Replace the exact `search` lines of a file with `replace` (empty search creates a new file).",
        {"path": _S, "search": _S, "replace": _S},
        ["path", "search", "replace"],
    ),
    _fn(
        "compile_check",
        "Compile one translation unit for ROCm with the edits so far.",
        {"path": _S},
        ["path"],
    ),
    _fn("finish", "Done: the edits so far fix the failure.", {"rationale": _S}, ["rationale"]),
    _fn("decline", "The failure should not be fixed by editing code (say why).", {"reason": _S}, ["reason"]),
]


class PathOutsideRepo(ValueError):
    """A tool call named a path outside the repository (or inside .git, or through a symlink)."""


class BadToolArgs(ValueError):
    """A tool call's arguments have the wrong type or shape; the message says which."""


def _text_arg(name: str, value: Any, *, limit: int = 4096) -> str:
    if not isinstance(value, str):
        raise BadToolArgs(f"{name} must be a string, got {type(value).__name__}")
    if "\x00" in value:
        raise BadToolArgs(f"{name} contains a NUL byte")
    if len(value.encode("utf-8", "surrogatepass")) > limit:
        raise BadToolArgs(f"{name} is longer than {limit} bytes")
    return value


def _line_arg(name: str, value: Any, default: int | None) -> int | None:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise BadToolArgs(f"{name} must be an integer line number, got {value!r}"[:200])
    try:
        return int(value)
    except ValueError:
        raise BadToolArgs(f"{name} must be an integer line number, got {value!r}"[:200]) from None


def repo_path(root: Path, rel: Any) -> Path:
    """`rel` inside `root`, refusing absolute paths, `..`, any `.git` component and any symlink on
    the way; the result is also checked to resolve inside the repo."""
    rel = _text_arg("path", rel)
    parts = Path(rel).parts
    if not rel or os.path.isabs(rel) or ".." in parts:
        raise PathOutsideRepo(f"{rel!r} is not a repo-relative path")
    if any(p.lower() == ".git" for p in parts):
        raise PathOutsideRepo(f"{rel!r} is inside .git: tools only see the working tree")
    base = root.resolve()
    here = base
    for part in parts:
        here = here / part
        if here.is_symlink():
            raise PathOutsideRepo(
                f"{rel!r} goes through the symlink {here.relative_to(base).as_posix()}: "
                f"tools do not follow symlinks; name the file it points to"
            )
        if not here.exists():
            break
    path = (base / rel).resolve()
    if path != base and base not in path.parents:
        raise PathOutsideRepo(f"{rel!r} resolves outside the repository")
    return path


def read_regular(path: Path, limit: int = MAX_FILE_BYTES) -> str:
    """Text of a regular file opened without following a symlink; OSError/ValueError otherwise."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ValueError("not a regular file")
        if info.st_size > limit:
            raise ValueError(f"{info.st_size} bytes is over the {limit}-byte read limit")
        return fh.read(limit + 1).decode("utf-8", errors="replace")


def _walk_files(root: Path) -> Iterator[Path]:
    """Regular files of the working tree: no .git, no symlinks, nothing outside the repo."""
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(
            d for d in dirnames if d.lower() != ".git" and not os.path.islink(os.path.join(dirpath, d))
        )
        for name in sorted(filenames):
            path = Path(dirpath, name)
            if not path.is_symlink() and stat.S_ISREG(path.lstat().st_mode):
                yield path


class ToolBox:
    """Executes tool calls against one repo checkout and remembers what was edited."""

    def __init__(self, root: Path, compile_check: Callable[[Path, str], tuple[bool, str]] | None = None):
        self.root = root.resolve()
        self.compile_check_fn = compile_check
        self.edited: list[str] = []
        self.created: list[str] = []

    def call(self, name: str, args: Any) -> str:
        """Run one tool call; whatever goes wrong is an `error: ...` string for the model, never a raise."""
        handler = getattr(self, f"tool_{name}", None) if isinstance(name, str) else None
        if handler is None or name in ("finish", "decline"):
            return f"error: unknown tool {str(name)[:80]!r}"
        if not isinstance(args, dict) or "_raw" in args:
            return f"error: the arguments of {name} are not a JSON object; send them as one"
        try:
            return handler(**{k: v for k, v in args.items() if not str(k).startswith("_")})
        except (PathOutsideRepo, BadToolArgs) as exc:
            return f"error: {exc}"
        except TypeError as exc:
            return f"error: bad arguments for {name}: {exc}"
        except (OSError, ValueError, RecursionError, MemoryError) as exc:
            return f"error: {name} failed: {type(exc).__name__}: {str(exc)[:300]}"

    def tool_read_file(self, path: str, start_line: Any = 1, end_line: Any = None) -> str:
        p = repo_path(self.root, path)
        start = max(1, _line_arg("start_line", start_line, 1) or 1)
        end = _line_arg("end_line", end_line, None)
        if not p.is_file():
            return f"error: no file {path}"
        lines = read_regular(p).splitlines()
        end = min(len(lines), end or start + MAX_READ_LINES - 1, start + MAX_READ_LINES - 1)
        return "\n".join(f"{i:5d} | {lines[i - 1]}" for i in range(start, end + 1)) or "(empty)"

    def tool_grep(self, pattern: str, glob: str | None = None) -> str:
        pattern = _text_arg("pattern", pattern, limit=MAX_PATTERN_CHARS)
        glob = None if glob is None else _text_arg("glob", glob)
        try:
            rx = re.compile(pattern)
        except re.error as exc:
            return f"error: bad regular expression: {exc}"
        hits = []
        for p in _walk_files(self.root):
            rel = p.relative_to(self.root).as_posix()
            if glob and not fnmatch.fnmatch(rel, glob):
                continue
            try:
                text = read_regular(p)
            except (OSError, ValueError):
                continue
            hits += [
                f"{rel}:{i}: {ln.strip()[:300]}" for i, ln in enumerate(text.splitlines(), 1) if rx.search(ln)
            ]
            if len(hits) >= MAX_GREP_HITS:
                return "\n".join(hits[:MAX_GREP_HITS]) + "\n(more hits cut)"
        return "\n".join(hits) or "no matches"

    def tool_list_dir(self, path: str = ".") -> str:
        p = self.root if path in ("", ".") else repo_path(self.root, path)
        if not p.is_dir():
            return f"error: no directory {path}"
        return "\n".join(
            c.name + ("@" if c.is_symlink() else "/" if c.is_dir() else "")
            for c in sorted(p.iterdir())
            if c.name.lower() != ".git"
        )

    def tool_propose_edit(self, path: str, search: str, replace: str) -> str:
        search = _text_arg("search", search, limit=MAX_EDIT_BYTES)
        replace = _text_arg("replace", replace, limit=MAX_EDIT_BYTES)
        if len(search) + len(replace) > MAX_EDIT_BYTES:
            return f"error: the edit is over {MAX_EDIT_BYTES} bytes: a fix changes a few lines"
        p = repo_path(self.root, path)
        if not p.exists():
            if search.strip():
                return f"error: no file {path}; use an empty search block to create it"
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(replace)
            self.created.append(path)
            return f"created {path}"
        result = apply_edit(read_regular(p), search, replace)
        if result.ok:
            if len(result.text.encode()) > MAX_FILE_BYTES:
                return f"error: the edit would make {path} larger than {MAX_FILE_BYTES} bytes"
            p.write_text(result.text)
            if path not in self.edited and path not in self.created:
                self.edited.append(path)
        return result.message

    def tool_compile_check(self, path: str) -> str:
        repo_path(self.root, path)
        if self.compile_check_fn is None:
            return "compile checks are not available in this run"
        ok, output = self.compile_check_fn(self.root, path)
        return ("compiles" if ok else "does not compile") + (f":\n{output[-3000:]}" if output else "")
