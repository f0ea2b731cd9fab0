"""The tools an LLM may call while fixing one failure. Every path stays inside the repo."""
from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent.editblocks import apply_edit

MAX_READ_LINES = 400
MAX_GREP_HITS = 60


def _fn(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": properties, "required": required}}}


_S = {"type": "string"}
_I = {"type": "integer"}
TOOL_SCHEMAS = [
    _fn("read_file", "Read lines of a repo file (1-based, inclusive).",
        {"path": _S, "start_line": _I, "end_line": _I}, ["path"]),
    _fn("grep", "Search the repo with a regular expression; optional glob filters file names.",
        {"pattern": _S, "glob": _S}, ["pattern"]),
    _fn("list_dir", "List a repo directory.", {"path": _S}, ["path"]),
    _fn("propose_edit", "Replace the exact `search` lines of a file with `replace` (empty search creates a "
        "new file).", {"path": _S, "search": _S, "replace": _S}, ["path", "search", "replace"]),
    _fn("compile_check", "Compile one translation unit for ROCm with the edits so far.", {"path": _S}, ["path"]),
    _fn("finish", "Done: the edits so far fix the failure.", {"rationale": _S}, ["rationale"]),
    _fn("decline", "The failure should not be fixed by editing code (say why).", {"reason": _S}, ["reason"]),
]


class PathOutsideRepo(ValueError):
    """A tool call named a path outside the repository."""


def repo_path(root: Path, rel: str) -> Path:
    """Resolve `rel` inside `root`; refuse `..`, absolute paths and symlinks that leave the repo."""
    if not rel or os.path.isabs(rel) or ".." in Path(rel).parts:
        raise PathOutsideRepo(f"{rel!r} is not a repo-relative path")
    path = (root / rel).resolve()
    if path != root.resolve() and root.resolve() not in path.parents:
        raise PathOutsideRepo(f"{rel!r} resolves outside the repository")
    return path


class ToolBox:
    """Executes tool calls against one repo checkout and remembers what was edited."""

    def __init__(self, root: Path, compile_check: Callable[[Path, str], tuple[bool, str]] | None = None):
        self.root = root.resolve()
        self.compile_check_fn = compile_check
        self.edited: list[str] = []
        self.created: list[str] = []

    def call(self, name: str, args: dict[str, Any]) -> str:
        handler = getattr(self, f"tool_{name}", None)
        if handler is None or name in ("finish", "decline"):
            return f"error: unknown tool {name!r}"
        try:
            return handler(**{k: v for k, v in args.items() if not k.startswith("_")})
        except PathOutsideRepo as exc:
            return f"error: {exc}"
        except TypeError as exc:
            return f"error: bad arguments for {name}: {exc}"

    def tool_read_file(self, path: str, start_line: int = 1, end_line: int | None = None) -> str:
        p = repo_path(self.root, path)
        if not p.is_file():
            return f"error: no file {path}"
        lines = p.read_text(errors="replace").splitlines()
        start = max(1, int(start_line))
        end = min(len(lines), int(end_line) if end_line else start + MAX_READ_LINES - 1,
                  start + MAX_READ_LINES - 1)
        return "\n".join(f"{i:5d} | {lines[i - 1]}" for i in range(start, end + 1)) or "(empty)"

    def tool_grep(self, pattern: str, glob: str | None = None) -> str:
        try:
            rx = re.compile(pattern)
        except re.error as exc:
            return f"error: bad regular expression: {exc}"
        hits = []
        for p in sorted(self.root.rglob("*")):
            rel = p.relative_to(self.root).as_posix()
            if ".git" in p.parts or not p.is_file() or (glob and not fnmatch.fnmatch(rel, glob)):
                continue
            try:
                text = p.read_text()
            except (UnicodeDecodeError, OSError):
                continue
            hits += [f"{rel}:{i}: {ln.strip()}" for i, ln in enumerate(text.splitlines(), 1) if rx.search(ln)]
            if len(hits) >= MAX_GREP_HITS:
                return "\n".join(hits[:MAX_GREP_HITS]) + "\n(more hits cut)"
        return "\n".join(hits) or "no matches"

    def tool_list_dir(self, path: str = ".") -> str:
        p = self.root if path in ("", ".") else repo_path(self.root, path)
        if not p.is_dir():
            return f"error: no directory {path}"
        return "\n".join(c.name + ("/" if c.is_dir() else "") for c in sorted(p.iterdir()) if c.name != ".git")

    def tool_propose_edit(self, path: str, search: str, replace: str) -> str:
        p = repo_path(self.root, path)
        if not p.exists():
            if search.strip():
                return f"error: no file {path}; use an empty search block to create it"
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(replace)
            self.created.append(path)
            return f"created {path}"
        result = apply_edit(p.read_text(), search, replace)
        if result.ok:
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
