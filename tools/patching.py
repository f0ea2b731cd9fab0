"""Apply and revert a Proposal's unified diff in a repo, safely.

Every path the diff names must stay inside the repo: no absolute paths, no `..`, nothing under
`.git`, and nothing that resolves (through symlinks) outside the repo root. `git apply --check`
runs before anything is written, so a diff either applies whole or not at all. A diff takes the line ends of
the files it patches first (tools.line_ends): a CRLF source is patched and stays CRLF.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path, PurePosixPath

from tools import git as gitops
from tools.line_ends import match_line_ends

MAX_DIFF_BYTES = 1 << 20
"""No fix is a megabyte of diff: anything larger is refused before git sees it."""
_HEADER_PATHS = re.compile(r"^(?:--- |\+\+\+ |rename from |rename to |copy from |copy to )(.+?)\s*$")
_GIT_HEADER = re.compile(r"^diff --git (\S+) (\S+)\s*$")


class PatchError(ValueError):
    """A diff was refused or did not apply; the one-line message says which file and why."""


def _strip_prefix(raw: str) -> str | None:
    raw = raw.split("\t", 1)[0].strip()
    if raw.startswith('"') and raw.endswith('"'):
        raw = raw[1:-1]
    if raw == "/dev/null":
        return None
    if raw.startswith(("a/", "b/")):
        return raw[2:]
    return raw


def diff_paths(diff: str) -> list[str]:
    """Every path a unified diff touches, without a/ b/ prefixes, in order of appearance."""
    paths: list[str] = []
    for line in diff.splitlines():
        raws: list[str] = []
        git = _GIT_HEADER.match(line)
        if git:
            raws = [git.group(1), git.group(2)]
        else:
            m = _HEADER_PATHS.match(line)
            if m:
                raws = [m.group(1)]
        for raw in raws:
            rel = _strip_prefix(raw) if not line.startswith(("rename", "copy")) else raw.strip()
            if rel is not None and rel not in paths:
                paths.append(rel)
    return paths


def check_paths(root: Path, paths: list[str]) -> None:
    """Raise PatchError unless every path stays inside `root` (after resolving symlinks)."""
    base = Path(root).resolve()
    for rel in paths:
        pure = PurePosixPath(rel)
        if pure.is_absolute() or rel.startswith("\\") or re.match(r"^[A-Za-z]:", rel):
            raise PatchError(
                f"refused patch: absolute path {rel!r}; patches may only touch files inside the repo"
            )
        if ".." in pure.parts:
            raise PatchError(
                f"refused patch: path {rel!r} contains '..'; patches may only touch files inside the repo"
            )
        if ".git" in pure.parts:
            raise PatchError(f"refused patch: path {rel!r} is inside .git")
        resolved = (base / rel).resolve()
        if resolved != base and base not in resolved.parents:
            raise PatchError(
                f"refused patch: {rel!r} resolves outside the repo (to {resolved}) through a symlink"
            )


def check_size(diff: str) -> None:
    """Raise PatchError when the diff is over MAX_DIFF_BYTES."""
    size = len(diff.encode("utf-8", "surrogatepass"))
    if size > MAX_DIFF_BYTES:
        raise PatchError(
            f"refused patch: the diff is {size} bytes, over the {MAX_DIFF_BYTES}-byte cap for one fix"
        )


def _git_apply(root: Path, diff: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return gitops.apply(root, diff, *extra)


def _first_line(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[0] if lines else "git apply failed without a message"


def apply_diff(root: Path, diff: str) -> list[str]:
    """Check then apply `diff` to the working tree of `root`; returns the touched paths."""
    root = Path(root)
    if not diff.strip():
        raise PatchError("refused patch: the diff is empty")
    check_size(diff)
    paths = diff_paths(diff)
    if not paths:
        raise PatchError("refused patch: no file headers (---/+++) found; is it a unified diff?")
    check_paths(root, paths)
    diff = match_line_ends(root, diff)
    check = _git_apply(root, diff, "--check")
    if check.returncode != 0:
        raise PatchError(f"patch does not apply: {_first_line(check.stderr)}")
    done = _git_apply(root, diff)
    if done.returncode != 0:
        raise PatchError(f"patch failed to apply: {_first_line(done.stderr)}")
    return paths


def revert_diff(root: Path, diff: str) -> None:
    """Undo an applied diff (reverse apply), leaving the rest of the working tree alone."""
    root = Path(root)
    check_paths(root, diff_paths(diff))
    done = _git_apply(root, match_line_ends(root, diff, reverse=True), "-R")
    if done.returncode != 0:
        raise PatchError(f"cannot revert patch: {_first_line(done.stderr)}")


def can_apply(root: Path, diff: str) -> bool:
    """True when the diff passes the path checks and `git apply --check`."""
    try:
        check_size(diff)
        paths = diff_paths(diff)
        check_paths(Path(root), paths)
    except PatchError:
        return False
    return (
        bool(paths) and _git_apply(Path(root), match_line_ends(Path(root), diff), "--check").returncode == 0
    )


def preview(root: Path, diff: str, paths: list[str]) -> dict[str, str | None]:
    """The text `paths` would have once `diff` is applied, without touching `root`: the files are copied
    to a scratch folder and the diff applied there. None for a path the diff deletes (or leaves absent);
    {} when the diff does not apply there, or is refused as `apply_diff` refuses it (a path out of the repo
    would otherwise be copied, and patched, beside the scratch folder)."""
    import shutil
    import tempfile

    try:
        check_size(diff)
        touched = diff_paths(diff)
        check_paths(Path(root), touched)
    except PatchError:
        return {}
    diff = match_line_ends(Path(root), diff)
    with tempfile.TemporaryDirectory(prefix="rocport-preview-") as scratch:
        for rel in touched:
            src = Path(root) / rel
            if src.is_file() and not src.is_symlink():
                (Path(scratch) / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, Path(scratch) / rel)
        gitops.run(Path(scratch), "init", "-q")  # paths resolve from here, not from a repo around it
        if _git_apply(Path(scratch), diff).returncode != 0:
            return {}
        out: dict[str, str | None] = {}
        for rel in paths:
            path = Path(scratch) / rel
            out[rel] = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None
        return out
