"""`rocport report` and `rocport pr`: what a run produced, for people and for upstream."""

from __future__ import annotations

from pathlib import Path

import typer

from agent.cli.app import app, fail


def run_view(run_id: str):
    """The run as the report sees it, or a one-line error naming what is wrong."""
    from agent.loop.rundir import RunDir
    from tools.report import ReportError, RunView

    try:
        path = RunDir(run_id).path
    except ValueError as exc:
        raise fail(str(exc)) from exc
    if not path.is_dir():
        raise fail(f"no run {run_id!r} under {path.parent}: `rocport runs` lists the runs")
    try:
        return RunView.load(path)
    except ReportError as exc:
        raise fail(str(exc)) from exc


@app.command()
def report(
    run_id: str = typer.Argument(..., help="A run id from `rocport runs`."),
    html: bool = typer.Option(False, "--html", help="Also write report.html (a static page with plots)."),
    show: bool = typer.Option(False, "--show", help="Print the markdown report."),
) -> None:
    """Write a run's report (markdown, and HTML with --html) into its run directory."""
    from tools.report import render_markdown
    from tools.report_html import render_html

    view = run_view(run_id)
    md = render_markdown(view)
    (view.path / "report.md").write_text(md)
    typer.echo(md if show else f"wrote {view.path / 'report.md'}")
    if html:
        (view.path / "report.html").write_text(render_html(view))
        typer.echo(f"wrote {view.path / 'report.html'}")


@app.command()
def pr(
    run_id: str = typer.Argument(..., help="A run id from `rocport runs`."),
    author: str = typer.Option(None, help="Commit author, 'Name <email>' (default: git config)."),
    push_to: str = typer.Option(
        None,
        "--push",
        metavar="REMOTE|URL",
        help="Push the PR branch to a remote of the clone or a fork's URL (https: the token goes along).",
    ),
    open_pr: bool = typer.Option(
        False, "--open", help="Create the pull request through the GitHub REST API."
    ),
    repo: str = typer.Option(None, help="OWNER/NAME of the upstream repository (with --open)."),
    base: str = typer.Option("main", help="Branch the pull request targets."),
    head_owner: str | None = typer.Option(
        None, help="Owner of the fork holding the branch (default: the OWNER of the --push URL)."
    ),
    api_url: str = typer.Option(None, help="GitHub API base URL (GitHub Enterprise: https://HOST/api/v3)."),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="With --open: print the request instead of sending it."
    ),
    draft: bool = typer.Option(
        True, "--draft/--ready", help="Open the PR as a draft (default) or ready for review."
    ),
    signoff: bool = typer.Option(
        False, "--signoff", help="Add a DCO Signed-off-by line (--author, else git config) to every commit."
    ),
    label: list[str] = typer.Option([], "--label", metavar="LABEL", help="Label the PR (repeatable)."),
    reviewer: list[str] = typer.Option(
        [], "--reviewer", metavar="LOGIN", help="Request a review (repeatable)."
    ),
) -> None:
    """Turn a run's kept patches into a PR branch, a patch series and a PR description; with --push and
    --open, push the branch to your fork and open the (draft) PR upstream in one step. The token is
    GITHUB_TOKEN, GH_TOKEN or the GitHub CLI's stored login; it is never written anywhere."""
    from tools.pr import PRError, build_pr, pr_request, push, remote_url
    from tools.pr import open_pr as send
    from tools.pr_github import url_owner

    view = run_view(run_id)
    if open_pr and not repo:
        raise fail("--open needs --repo OWNER/NAME (and --push REMOTE unless the branch is already there)")
    if (label or reviewer) and not open_pr:
        raise fail("--label and --reviewer apply to the PR that --open creates; add --open --repo OWNER/NAME")
    try:
        result = build_pr(view, author=author, signoff=signoff)
        typer.echo(f"title: {result.title}")
        typer.echo(f"branch {result.branch}: {len(result.commits)} commit(s) on {result.base_commit[:12]}")
        typer.echo(f"patch series: {Path(result.patches[0]).parent}  ({len(result.patches)} files)")
        typer.echo(f"description: {result.description}")
        if push_to:
            typer.echo(push(view, result, push_to, api_url=api_url))
            head_owner = head_owner or url_owner(remote_url(view, push_to)) or None
        if open_pr:
            req = pr_request(
                result,
                slug=repo,
                base_branch=base,
                api_url=api_url,
                head_owner=head_owner,
                draft=draft,
                labels=label,
                reviewers=reviewer,
                dry_run=dry_run,
            )
            typer.echo(req.redacted() if dry_run else f"opened {send(req)}")
    except PRError as exc:
        raise fail(str(exc)) from exc
