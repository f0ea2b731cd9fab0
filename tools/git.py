"""Every git command rocport runs on the host, on a clone it does not trust.

A framework clone is written by code rocport does not control: the build runs inside it and an
LLM edits it. Git runs commands named in a repo's own config (core.fsmonitor, hooks, filter and
diff drivers, credential helpers, ssh commands, ...), so each call here turns those off:
hooks and fsmonitor always, and every executing key the repo's local config sets gets a harmless
`-c` override. A repo whose config moves the work tree elsewhere is refused outright.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

# The commit-message text lives in tools/commit_message.py; callers reach it through this module too,
# as `gitops.patch_commit_message`, beside the commit it is written for.
from tools.commit_message import evidence_lines as evidence_lines
from tools.commit_message import patch_commit_message as patch_commit_message

ALWAYS = (
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "protocol.ext.allow=never",
    "commit.gpgSign=false",
    "tag.gpgSign=false",
    "gc.auto=0",
    "maintenance.auto=false",
    "submodule.recurse=false",
)
"""Overrides on every call: no hook, no fsmonitor, no ext:: transport, no signing program, no auto gc."""

_HARMLESS = {
    "textconv": "cat",
    "clean": "",
    "smudge": "",
    "process": "",
    "driver": "false",
    "command": "false",
    "program": "false",
    "sshcommand": "ssh",
    "gitproxy": "",
    "askpass": "",
    "editor": "true",
    "pager": "cat",
    "helper": "",
    "uploadpack": "git-upload-pack",
    "receivepack": "git-receive-pack",
    "proxy": "",
    "proxycommand": "",
    "alternaterefscommand": "",
    "fsmonitor": "false",
    "hookspath": "/dev/null",
    "external": "",
}
"""Config keys (by last name part) whose value git runs as a command, and what replaces it."""
_UNTRUSTED_SCOPES = ("local", "worktree")
_NO_EXT = ("diff", "log", "show", "format-patch")
"""Subcommands that could run diff.external / textconv drivers: always with --no-ext-diff."""
_DROP_ENV = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_CONFIG",
    "GIT_EXTERNAL_DIFF",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_PAGER",
    "GIT_EDITOR",
    "GIT_ASKPASS",
)
ROCPORT_IDENTITY = ("-c", "user.name=rocport", "-c", "user.email=rocport@localhost")


class GitError(RuntimeError):
    """A git command failed; the one-line message has git's own fatal/error line."""


def _env(extra: dict[str, str] | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _DROP_ENV}
    env.update({"GIT_TERMINAL_PROMPT": "0", "GIT_EDITOR": "true", "GIT_PAGER": "cat", "LC_ALL": "C"})
    env.update(extra or {})
    return env


def _base() -> list[str]:
    args = ["git", "--no-pager"]
    for item in ALWAYS:
        args += ["-c", item]
    return args


def _said(stderr: str, returncode: int) -> str:
    lines = [ln.strip() for ln in stderr.strip().splitlines() if ln.strip()]
    # git's own fatal/error line says what went wrong; its last line is often only advice
    return next(
        (ln for ln in lines if ln.startswith(("fatal:", "error:"))),
        lines[-1] if lines else f"exit {returncode}",
    )


def _parse_scoped(raw: str) -> list[tuple[str, str, str]]:
    """(scope, key, value) out of `git config --list --show-scope -z` (scope\\0key\\nvalue\\0 ...)."""
    fields = raw.split("\0")
    out = []
    for scope, kv in zip(fields[0::2], fields[1::2], strict=False):  # a trailing \0 leaves one extra field
        key, _, value = kv.partition("\n")
        out.append((scope, key, value))
    return out


def _overrides(root: Path) -> list[str]:
    proc = subprocess.run(
        [*_base(), "config", "--list", "--show-scope", "--includes", "-z"],
        cwd=root,
        capture_output=True,
        env=_env(None),
        timeout=60,
        check=False,
    )
    if proc.returncode != 0:
        return []  # not a repo (yet): the command itself will say so
    overrides: list[str] = []
    for scope, key, value in _parse_scoped(proc.stdout.decode("utf-8", "replace")):
        if scope not in _UNTRUSTED_SCOPES:
            continue
        if key.lower() == "core.worktree" or (
            key.lower() == "core.bare" and value.strip().lower() != "false"
        ):
            raise GitError(
                f"refusing to run git in {root}: its .git/config sets {key} (something in the "
                f"clone rewrote git's config); delete the clone and rerun"
            )
        last = key.rsplit(".", 1)[-1].lower()
        if last in _HARMLESS:
            overrides += ["-c", f"{key}={_HARMLESS[last]}"]
    return overrides


def command(root: Path | None, *args: str) -> list[str]:
    """The full argv for `git args...` in `root`, with every executing config neutralised."""
    argv = _base() + (_overrides(Path(root)) if root is not None and Path(root).is_dir() else [])
    sub = next((a for a in args if not a.startswith("-")), "")
    argv += list(args)
    if sub in _NO_EXT:
        i = argv.index(sub, len(argv) - len(args)) + 1
        argv[i:i] = ["--no-ext-diff"] + (["--no-textconv"] if sub != "format-patch" else [])
    return argv


def run(
    root: Path | None,
    *args: str,
    input: str | bytes | None = None,
    ok: Sequence[int] = (0,),
    env: dict[str, str] | None = None,
    timeout: float = 300,
    text: bool = True,
) -> subprocess.CompletedProcess[Any]:
    """Run git in `root`; GitError (git's own reason) unless the exit code is in `ok`."""
    argv = command(root, *args)
    try:
        proc = subprocess.run(
            argv,
            cwd=root,
            input=input,
            capture_output=True,
            text=text,
            env=_env(env),
            timeout=timeout,
            check=False,
            stdin=None if input is not None else subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        raise GitError(f"git {_verb(args)} timed out after {timeout:.0f}s in {root}") from None
    if proc.returncode not in ok:
        stderr = proc.stderr if text else proc.stderr.decode("utf-8", "replace")
        raise GitError(f"git {_verb(args)} failed in {root}: {_said(stderr, proc.returncode)}")
    return proc


def _verb(args: Iterable[str]) -> str:
    return next((a for a in args if not a.startswith("-") and "=" not in a), "")


def git(root: Path, *args: str, **kwargs: Any) -> str:
    """stdout of `git args...` in `root`, stripped; GitError when it fails."""
    out: str = run(root, *args, **kwargs).stdout
    return out.strip()


def is_repo(root: Path) -> bool:
    """True when `root` is inside a git work tree."""
    try:
        return git(root, "rev-parse", "--is-inside-work-tree") == "true"
    except (GitError, OSError):
        return False


def head(root: Path) -> str:
    return git(root, "rev-parse", "HEAD")


def current_branch(root: Path) -> str:
    """The checked-out branch, or '' on a detached HEAD."""
    return git(root, "branch", "--show-current")


def clone(source: str, dest: Path, *, timeout: float = 1800) -> None:
    """Clone without submodules or hooks; GitError with git's reason."""
    run(None, "clone", "--no-recurse-submodules", "-q", "--", source, str(dest), timeout=timeout)


def dirty_files(root: Path, *paths: str, untracked: bool = True) -> str:
    """`git status --porcelain` (limited to `paths` when given)."""
    extra = [] if untracked else ["--untracked-files=no"]
    return git(root, "status", "--porcelain", *extra, *(["--", *paths] if paths else []))


def reset_hard(root: Path, ref: str) -> None:
    """Put the work tree back at `ref`; untracked files go, ignored build outputs stay."""
    git(root, "reset", "-q", "--hard", ref)
    git(root, "clean", "-fdq")


def apply(root: Path, diff: str, *extra: str) -> subprocess.CompletedProcess[str]:
    """`git apply` the diff from stdin (the result is returned, not raised: callers word the error).

    The diff goes as bytes: a source that is not valid UTF-8 was read with surrogateescape, so its
    diff carries the original bytes back unchanged."""
    done = run(
        root,
        "apply",
        "--whitespace=nowarn",
        *extra,
        "-",
        input=diff.encode("utf-8", "surrogateescape"),
        ok=range(256),
        timeout=60,
        text=False,
    )
    done.stdout, done.stderr = done.stdout.decode("utf-8", "replace"), done.stderr.decode("utf-8", "replace")
    return done


def diff_files(root: Path, edited: Sequence[str], created: Sequence[str] = ()) -> str:
    """The unified diff of edited tracked files plus new untracked files (as additions)."""
    out = run(root, "diff", "--", *edited).stdout if edited else ""
    for rel in created:
        out += run(root, "diff", "--no-index", "--", "/dev/null", rel, ok=(0, 1)).stdout
    return out


def snapshot(root: Path, message: str) -> str:
    """Make the folder `root` a fresh repository (branch main) whose one commit, by rocport, holds all
    its files: how fixture clones and eval corpora start. Returns the commit's sha."""
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, *ROCPORT_IDENTITY, "commit", "-q", "--no-verify", "-m", message)
    return head(root)


def has_identity(root: Path) -> bool:
    return run(root, "config", "user.email", ok=(0, 1)).returncode == 0


def commit_files(
    root: Path,
    files: Sequence[str],
    message: str,
    *,
    author: str | None = None,
    env: dict[str, str] | None = None,
) -> str:
    """Commit exactly `files` with `message` (as rocport when no identity is configured); the new sha."""
    git(root, "add", "--", *files)
    ident = () if has_identity(root) else ROCPORT_IDENTITY
    author_arg = [f"--author={author}"] if author else []
    git(
        root,
        *ident,
        "commit",
        "-q",
        "--no-verify",
        *author_arg,
        "-F",
        "-",
        "--",
        *files,
        input=message,
        env=env,
    )
    return head(root)
