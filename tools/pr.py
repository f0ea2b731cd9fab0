"""From a run's kept patches to something a maintainer can merge: a clean branch with one commit per
fix, a `git format-patch` series, a PR description full of evidence, a push, and a GitHub PR."""

from __future__ import annotations

import json
import os
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tools import git as gitops
from tools.pr_github import GITHUB_API, GitHubError, PRRequest, github_token, post, push_auth_env, token_host
from tools.pr_text import commit_message, pr_description, pr_title
from tools.report import RunView


class PRError(ValueError):
    """The PR cannot be made; one line saying what to do."""


@dataclass
class PullRequest:
    branch: str
    base_commit: str
    commits: list[str] = field(default_factory=list)
    patches: list[Path] = field(default_factory=list)
    description: Path | None = None
    title: str = ""


def _git(repo: Path, *args: str, env: dict[str, str] | None = None) -> str:
    try:
        return gitops.git(repo, *args, env=env)
    except gitops.GitError as exc:
        raise PRError(str(exc)) from None


def kept_outcomes(state: dict[str, Any]) -> list[dict[str, Any]]:
    return [o for o in state.get("outcomes", []) if o.get("kept") and o.get("commit")]


def _identity(repo: Path, author: str | None) -> str:
    """'Name <email>' for a Signed-off-by line: --author, else git config; an error when neither says."""
    if author:
        return author
    name = gitops.run(repo, "config", "user.name", ok=(0, 1)).stdout.strip()
    email = gitops.run(repo, "config", "user.email", ok=(0, 1)).stdout.strip()
    if not name or not email:
        raise PRError(
            "--signoff needs who signs: pass --author 'Name <email>' or set git config user.name and "
            "user.email"
        )
    return f"{name} <{email}>"


def build_pr(view: RunView, *, author: str | None = None, signoff: bool = False) -> PullRequest:
    """Recreate `rocport/pr-<run>` from the base commit with one rewritten commit per kept fix, then
    write the patch series and the description into <run>/pr/. `signoff` adds the DCO's Signed-off-by."""
    state = view.state
    repo = Path(state.get("repo_dir") or view.path / "repo")
    base = state.get("base_commit", "")
    kept = kept_outcomes(state)
    if not kept:
        raise PRError(f"run {view.run_id} kept no patches: nothing to send upstream")
    if not (repo / ".git").exists():
        raise PRError(f"the run's clone {repo} is gone: rerun `rocport port` to recreate it")
    signer = _identity(repo, author) if signoff else ""
    branch = f"rocport/pr-{view.run_id}"
    pr = PullRequest(branch=branch, base_commit=base, title=pr_title(view))
    _git(repo, "checkout", "-q", "-B", branch, base)
    env = {"GIT_COMMITTER_NAME": "rocport", "GIT_COMMITTER_EMAIL": "rocport@localhost"}
    for i, outcome in enumerate(kept, 1):
        _git(repo, "cherry-pick", "--no-commit", outcome["commit"], env=env)
        msg_file = view.path / "pr" / f".msg-{i}"
        msg_file.parent.mkdir(parents=True, exist_ok=True)
        msg_file.write_text(
            commit_message(outcome, view) + (f"\nSigned-off-by: {signer}\n" if signer else "")
        )
        args = ["commit", "-q", "-F", str(msg_file)] + ([f"--author={author}"] if author else [])
        _git(repo, *args, env=env)
        msg_file.unlink()
        pr.commits.append(_git(repo, "rev-parse", "HEAD"))
    out = view.path / "pr"
    for old in out.glob("*.patch"):
        old.unlink()
    _git(repo, "format-patch", "-q", "-o", str(out), f"{base}..{branch}")
    pr.patches = sorted(out.glob("*.patch"))
    if state.get("bench"):
        (out / "bench.json").write_text(json.dumps(state["bench"], indent=2))
    pr.description = out / "PR.md"
    pr.description.write_text(pr_description(view, pr.commits))
    return pr


def remote_url(view: RunView, remote: str) -> str:
    """The URL `--push` names: itself when it is a URL or a path, else the clone's remote of that name."""
    if "://" in remote or "/" in remote or remote.endswith(".git"):
        return remote
    repo = Path(view.state.get("repo_dir") or view.path / "repo")
    try:
        return gitops.git(repo, "remote", "get-url", remote)
    except gitops.GitError:
        raise PRError(
            f"--push {remote!r} is neither a URL nor a remote of the clone (git -C {repo} remote -v); "
            f"pass the fork's URL, e.g. --push https://github.com/YOU/NAME.git"
        ) from None


def push(view: RunView, pr: PullRequest, remote: str, *, api_url: str | None = None) -> str:
    """Push the PR branch to a remote name or a fork URL. An https URL on GitHub (or the --api-url host)
    gets the token (GITHUB_TOKEN, GH_TOKEN, gh's login) for this one command only (tools.pr_github)."""
    repo = Path(view.state.get("repo_dir") or view.path / "repo")
    url = remote_url(view, remote)
    auth = push_auth_env(url, api_url)
    if auth:
        _refuse_url_rewrites(repo)
    try:
        _git(repo, "push", "-q", "--force", url, f"{pr.branch}:{pr.branch}", env=auth)
    except PRError as exc:
        said = _redact(str(exc), auth)
        hint = (
            f"check the token's write access to {_shown(url)}"
            if auth
            else f"check the remote (git -C {repo} remote -v), your access, or set GH_TOKEN for "
            f"{token_host(api_url)}"
        )
        raise PRError(f"{said}; {hint}") from None
    told = " (the token went as an HTTP header of this push only)" if auth else ""
    return f"pushed {pr.branch} to {_shown(url)}{told}"


def _shown(url: str) -> str:
    """A URL as printed: without a password someone wrote into it."""
    parts = urllib.parse.urlsplit(url)
    if not parts.password:
        return url
    return urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


def _refuse_url_rewrites(repo: Path) -> None:
    """A clone whose own config rewrites URLs (url.*.insteadOf) could send the push elsewhere."""
    found = gitops.run(
        repo, "config", "--local", "--get-regexp", r"^url\..*\.(push)?insteadof$", ok=(0, 1)
    ).stdout.strip()
    if found:
        raise PRError(
            f"the clone's .git/config rewrites URLs ({found.splitlines()[0]}): refusing to push with a "
            f"token; remove those keys or push from your own checkout"
        )


def _redact(text: str, auth: dict[str, str]) -> str:
    value = auth.get("GIT_CONFIG_VALUE_0", "")
    return text.replace(value, "Authorization: ***") if value else text


def pr_request(
    pr: PullRequest,
    *,
    slug: str,
    base_branch: str,
    api_url: str | None = None,
    head_owner: str | None = None,
    draft: bool = True,
    labels: list[str] | None = None,
    reviewers: list[str] | None = None,
    dry_run: bool = False,
) -> PRRequest:
    """GitHub or GitHub Enterprise (api_url like https://ghe.example.com/api/v3); a dry run needs no token.
    Draft by default: a maintainer marks it ready after reading the evidence."""
    if slug.count("/") != 1:
        raise PRError(f"--repo {slug!r} must be OWNER/NAME")
    api = (api_url or os.environ.get("GITHUB_API_URL") or GITHUB_API).rstrip("/")
    token = github_token(token_host(api))
    if not token and not dry_run:
        raise PRError(
            "GITHUB_TOKEN is not set (nor GH_TOKEN, nor a `gh auth login`): export a token with "
            "pull-request write access"
        )
    head = f"{head_owner}:{pr.branch}" if head_owner else pr.branch
    body = {
        "title": pr.title,
        "head": head,
        "base": base_branch,
        "draft": draft,
        "body": pr.description.read_text() if pr.description else "",
    }
    return PRRequest(
        url=f"{api}/repos/{slug}/pulls",
        body=body,
        token=token,
        labels=list(labels or []),
        reviewers=list(reviewers or []),
    )


def open_pr(req: PRRequest, timeout_s: float = 30) -> str:
    """Open the PR, then add its labels and reviewers; returns the PR's html_url."""
    try:
        answer = post(req, req.url, req.body, timeout_s)
        number = answer.get("number")
        if number is not None:
            for url, body in req.followups(number):
                post(req, url, body, timeout_s)
    except GitHubError as exc:
        raise PRError(str(exc)) from exc
    return answer.get("html_url") or answer.get("url") or "(no url in the answer)"
