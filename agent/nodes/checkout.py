"""checkout: clone the framework (URL or local path) at its ref into the run dir, on a work branch."""
from __future__ import annotations

import shutil
from pathlib import Path

import git

from agent.nodes.env import RunEnv
from agent.state import PortState


class CheckoutError(RuntimeError):
    """The framework could not be cloned or the ref does not exist; the message says which."""


def _source(env: RunEnv) -> str:
    spec = env.job.framework
    source = spec.repo or env.profile.repo_url
    if not source:
        raise CheckoutError(f"no repo for framework {spec.profile!r}: set framework.repo to a git URL or path")
    if "://" not in source and not source.startswith("git@"):
        path = Path(source).expanduser().resolve()
        if not (path / ".git").exists():
            raise CheckoutError(f"framework.repo {source!r} is not a git repository: pass a clone or a URL")
        return str(path)
    return source


def _git_reason(exc: git.GitCommandError) -> str:
    """git's own one-line reason (its `fatal:` line) out of GitPython's multi-line message."""
    lines = [ln.strip().strip("'").strip() for ln in str(exc.stderr or exc).splitlines()]
    lines = [ln.removeprefix("stderr:").strip().strip("'") for ln in lines if ln]
    fatal = [ln for ln in lines if ln.startswith(("fatal:", "error:"))]
    return (fatal or lines or ["git failed"])[-1]


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
        repo = git.Repo.clone_from(source, dest)
    except git.GitCommandError as exc:
        raise CheckoutError(f"cannot clone {source}: {_git_reason(exc)}; check the URL/path and the network, "
                            f"or clone it yourself and pass framework.repo=PATH") from exc
    ref = env.job.framework.ref or (env.profile.default_ref if env.job.framework.repo is None else None)
    if ref:
        try:
            repo.git.checkout(ref)
        except git.GitCommandError as exc:
            raise CheckoutError(f"ref {ref!r} not found in {source}: pass an existing branch, tag or commit "
                                f"with framework.ref") from exc
    repo.git.checkout("-b", branch)
    with repo.config_writer() as cfg:  # commits of kept patches are authored by rocport, in this clone only
        cfg.set_value("user", "name", "rocport")
        cfg.set_value("user", "email", "rocport@localhost")
    head = repo.head.commit.hexsha
    env.observer.emit("checkout", source=source, ref=ref, branch=branch, commit=head)
    return {"repo_dir": str(dest), "branch": branch, "base_commit": head, "head": head}


def reset_to_head(state: PortState) -> None:
    """Put the clone back at the last commit the loop recorded (a killed node may have left edits)."""
    repo = git.Repo(state.repo_dir)
    repo.git.reset("--hard", state.head)
    repo.git.clean("-fdq")  # ignored build outputs stay
