"""`rocport fix REPO`: rule proposals for a log's (or a scan's) failures, validated and committed one by one."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from agent.cli.app import app, fail
from agent.cli.output import console as output_console
from agent.loop.progress import RichProgress

DEFAULT_IMAGE = "rocport/rocm-build:6.4"
LOCAL = "local"


def _failures(repo: Path, log: Path | None, from_scan: bool, profile) -> list:
    if (log is None) == (not from_scan):
        raise fail(
            "give exactly one of --log LOG (diagnose a build/server log) or --from-scan (scan the repo)"
        )
    if log is not None:
        from tools.diagnose import DiagnoseError, diagnose_file

        try:
            return diagnose_file(log, repo_root=repo)
        except DiagnoseError as exc:
            raise fail(str(exc)) from None
    from tools.scan import ScanError, scan_repo

    try:
        return scan_repo(repo, profile=profile)
    except ScanError as exc:
        raise fail(str(exc)) from None


def _toolchains(repo: Path, image: str, arch: str, profile):
    """hipcc's sandbox (the image, or the host) and nvcc's, each with a warm compile service as a port
    run has (agent/loop/compilers.py): a wave's recompiles of units no patch changed since they were
    last compiled are answered from the services' cache instead of compiled again."""
    from agent.loop.compilers import Compilers
    from agent.patch.validate import Toolchains
    from sandboxes.base import Sandbox, SandboxError

    if image == LOCAL:
        from sandboxes.local import LocalSandbox

        hip: Sandbox = LocalSandbox(repo)
    else:
        from sandboxes.docker import DockerSandbox

        try:
            hip = DockerSandbox(image, repo)
        except SandboxError as exc:
            raise fail(f"{exc} (or pass --image local to use this machine's hipcc)") from None
    compilers = Compilers.start(hip, repo)  # nvcc's host sandbox too, when nvcc is installed (as a port's)
    tools = Toolchains.from_profile(hip, None, arch, profile, compilers=compilers)
    tools.extra_env = {"HIP_PLATFORM": "amd"}
    return tools, compilers


def _print(records, console: Console, dry_run: bool) -> None:
    if dry_run:
        for rec in records:
            for prop in rec.proposals:
                console.print(f"[bold]{rec.failure.signature}[/] ({prop.proposer})\n{prop.rationale}")
                # a source that is not UTF-8 gives a diff with its raw bytes escaped: shown replaced
                console.out(
                    prop.diff.encode("utf-8", "surrogateescape").decode("utf-8", "replace"), highlight=False
                )
    table = Table("wave", "failure", "file", "result", "commit / reason")
    for rec in records:
        commit = next((o.commit[:10] for o in rec.outcomes if o.commit), "")
        table.add_row(
            str(rec.wave),
            f"{rec.failure.kind} {rec.failure.symbol or ''}",
            rec.failure.file or "",
            rec.status,
            commit or "; ".join(rec.reasons)[:200],
        )
    console.print(table)


def _print_units(units, console: Console) -> None:
    """One row per translation unit: compiles, or still fails with its first error."""
    if not units:
        return
    table = Table("unit", "ROCm build", "first error")
    for u in units:
        table.add_row(u.unit, "compiles" if u.compiles else "still fails", u.first_error[:160])
    console.print(table)
    failing = sum(not u.compiles for u in units)
    console.print(
        f"{len(units) - failing}/{len(units)} unit(s) compile for ROCm"
        + (f"; {failing} still fail (declined: their first error has no proven fix)" if failing else "")
    )


def _fix_on_branch(repo: Path, ws, failures: list, image: str, arch: str, prof, python: str):
    """Validate and commit in waves on a work branch; on any failure the user's own checkout is restored."""
    from agent.loop.waves import run_waves
    from agent.patch.fix import FixError, current_checkout, restore_checkout, start_branch
    from agent.patch.validate import Validator
    from agent.patch.withdraw import Withdrawal, withdraw_unproven
    from tools import git as gitops

    try:
        original = current_checkout(repo)
    except FixError as exc:
        raise fail(str(exc)) from None
    tools, compilers, branch = None, None, None
    try:
        base = gitops.head(repo)
        branch = start_branch(repo)
        tools, compilers = _toolchains(repo, image, arch, prof)
        with RichProgress(output_console(stderr=True), title="fix", events=False, counters=False) as progress:
            progress({"event": "phase", "phase": f"fix {len(failures)} failure(s) with unit compiles"})
            tools.python = python
            session = run_waves(ws, failures, Validator(repo, tools))
        withdrawal = Withdrawal()  # no unit was compiled: nothing to judge the patches by
        if session.units:
            compiling = {u.unit for u in session.units if u.compiles}
            withdrawal = withdraw_unproven(repo, base, branch, session.records, compiling)
        return session, branch, withdrawal, compilers.stats()
    except BaseException as exc:  # whatever stopped it (Ctrl-C included), the checkout goes back
        restore_checkout(repo, original, branch)
        if isinstance(exc, FixError):
            raise fail(str(exc)) from None
        if isinstance(exc, Exception) and not isinstance(exc, typer.Exit):
            raise fail(f"fix stopped ({type(exc).__name__}: {exc}); {repo} is back on {original}") from None
        raise
    finally:
        if compilers is not None:
            compilers.close()
        if tools is not None:
            tools.close()


@app.command()
def fix(
    repo: Path = typer.Argument(..., help="The framework's git checkout."),
    log: Path | None = typer.Option(None, "--log", help="A build or server log to diagnose."),
    from_scan: bool = typer.Option(
        False, "--from-scan", help="Fix what `rocport scan` finds instead of a log."
    ),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the proposals; apply and commit nothing."),
    arch: str | None = typer.Option(
        None, "--arch", help="ROCm target (default gfx942; gfx90a with --image local)."
    ),
    image: str = typer.Option(
        DEFAULT_IMAGE, "--image", help="ROCm build image for hipcc, or 'local' for the host's."
    ),
    profile: str | None = typer.Option(None, "--profile", help="Framework profile name or YAML path."),
    python: str = typer.Option(
        "python3",
        "--python",
        help="Interpreter (in the image, or on the host with --image local) that imports "
        "touched Python modules to prove a Python fix.",
    ),
) -> None:
    """Propose rule fixes, validate each with hipcc + nvcc, commit each kept patch on rocport/fix-<sha>."""
    from agent.patch.fix import fix_failures
    from agent.profiles import ProfileError, load_profile
    from agent.proposers.base import Workspace

    repo = repo.resolve()
    if not repo.is_dir():
        raise fail(f"{repo} is not a directory: pass the framework's git checkout")
    try:
        prof = load_profile(profile) if profile else None
    except ProfileError as exc:
        raise fail(str(exc)) from None
    arch = arch or ("gfx90a" if image == LOCAL else "gfx942")
    if image != LOCAL:
        from agent.loop.preflight_checks import arch_problem

        problem = arch_problem(arch, image, "--arch")
        if problem:
            raise fail(problem)
    failures = _failures(repo, log, from_scan, prof)
    ws = Workspace(root=repo, profile=prof, target_arch=arch)
    console = output_console()
    if dry_run:
        _print(fix_failures(ws, failures, None, dry_run=True), console, True)
        return
    session, branch, withdrawal, stats = _fix_on_branch(repo, ws, failures, image, arch, prof, python)
    _print(session.records, console, False)
    _print_units(session.units, console)
    if stats.get("compile_requests"):
        console.print(
            f"unit compiles (hipcc and nvcc): {stats['compile_cache_misses']} compiled, "
            f"{stats['compile_cache_hits']} answered from the compile cache (the same input compiled before)",
            highlight=False,
        )
    if withdrawal.withdrawn:
        console.print(
            f"{len(withdrawal.withdrawn)} patch(es) withdrawn from {branch}: every unit they touch still fails, "
            f"so they prove nothing yet; the full history is on {withdrawal.partial_branch}"
        )
    elif withdrawal.blocked:
        console.print(f"unproven patches stay on {branch} ({withdrawal.blocked}): marked [still fails]")
    kept = sum(r.status == "kept" for r in session.records)
    console.print(f"{kept} fix(es) committed on {branch}")
