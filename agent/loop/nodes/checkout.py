"""checkout: clone the framework (URL or local path) at its ref into the run dir, on a work branch."""

from __future__ import annotations

import shutil
from pathlib import Path

from agent.loop.nodes.env import RunEnv
from agent.loop.state import PortState
from tools import git as gitops


class CheckoutError(RuntimeError):
    """The framework could not be cloned or the ref does not exist; the message says which."""


def _source(env: RunEnv) -> str:
    spec = env.job.framework
    source = spec.repo or env.profile.repo_url
    if not source:
        raise CheckoutError(
            f"no repo for framework {spec.profile!r}: set framework.repo to a git URL or path"
        )
    if "://" not in source and not source.startswith("git@"):
        path = Path(source).expanduser().resolve()
        if not (path / ".git").exists():
            raise CheckoutError(f"framework.repo {source!r} is not a git repository: pass a clone or a URL")
        return str(path)
    return source


def checkout(state: PortState, env: RunEnv) -> dict:
    """Clone at the ref, create `rocport/port-<run_id>` there; a resumed run keeps its clone."""
    dest = env.rundir.repo
    branch = f"rocport/port-{state.run_id}"
    if state.repo_dir and Path(state.repo_dir, ".git").exists():
        return {}
    source = _source(env)
    if dest.exists():  # a clone that a killed process left half-made (no checkpoint recorded it)
        shutil.rmtree(dest)
    try:
        gitops.clone(source, dest)
    except gitops.GitError as exc:
        reason = str(exc).split(": ", 1)[-1]
        raise CheckoutError(
            f"cannot clone {source}: {reason}; check the URL/path and the network, "
            f"or clone it yourself and pass framework.repo=PATH"
        ) from exc
    ref = env.job.framework.ref or (env.profile.default_ref if env.job.framework.repo is None else None)
    if ref:
        try:
            gitops.git(dest, "checkout", "-q", ref)
        except gitops.GitError as exc:
            raise CheckoutError(
                f"ref {ref!r} not found in {source}: pass an existing branch, tag or commit "
                f"with framework.ref"
            ) from exc
    gitops.git(dest, "checkout", "-q", "-b", branch)
    # commits of kept patches are authored by rocport, in this clone only
    gitops.git(dest, "config", "user.name", "rocport")
    gitops.git(dest, "config", "user.email", "rocport@localhost")
    head = gitops.head(dest)
    env.observer.emit("checkout", source=source, ref=ref, branch=branch, commit=head)
    return {"repo_dir": str(dest), "branch": branch, "base_commit": head, "head": head}


def reset_to_head(state: PortState) -> None:
    """Put the clone back at the last commit the loop recorded (a killed node may have left edits)."""
    gitops.reset_hard(Path(state.repo_dir), state.head)
