"""Making a sweep runnable as written: `repo: bundled:tinyserve` becomes a git repo of rocport's fixture
framework under $ROCPORT_HOME/fixtures (branch main, tag v0.1), `$ROCPORT_HOME` in a model path is
expanded, and a model with `fixture: tinyserve` gets a random-weight checkpoint written where it is
missing. Everything is created once and reused on later nights."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from agent.sweep.spec import SweepSpec
from tools import git as gitops
from tools.git import ROCPORT_IDENTITY

BUNDLED = "bundled:"


class FixtureError(RuntimeError):
    """A bundled repo or a fixture checkpoint could not be made; the message says why."""


def expand_path(path: str) -> str:
    """`$ROCPORT_HOME/...` and `~/...` in a sweep file, with ROCPORT_HOME's default when unset."""
    from agent.loop.rundir import rocport_home

    home = str(rocport_home())
    path = path.replace("${ROCPORT_HOME}", home).replace("$ROCPORT_HOME", home)
    return str(Path(os.path.expandvars(path)).expanduser())


def bundled_repo(name: str) -> Path:
    """The bundled fixture framework `name` as a git repo (main + tag v0.1), made once."""
    from agent.loop.rundir import rocport_home
    from tools.fixture_frameworks import FixtureFrameworkError, copy_framework

    dest = rocport_home() / "fixtures" / f"{name}-repo"
    if (dest / ".git").is_dir():
        return dest
    try:
        copy_framework(name, dest)
    except FixtureFrameworkError as exc:
        raise FixtureError(f"repo: {BUNDLED}{name}: {exc}") from exc
    for args in (
        ["init", "-q", "-b", "main"],
        ["add", "-A"],
        ["commit", "-q", "-m", f"{name} (bundled fixture)"],
        ["tag", "v0.1"],
    ):
        try:
            gitops.git(dest, *ROCPORT_IDENTITY, *args)
        except gitops.GitError as exc:
            raise FixtureError(str(exc)) from None
    return dest


def fixture_checkpoint(path: Path, args: list[str]) -> None:
    """Write a tinyserve random-weight checkpoint at `path` unless one is there."""
    from tools.fixture_frameworks import FRAMEWORKS_DIR

    if (path / "config.json").is_file():
        return
    proc = subprocess.run(
        [sys.executable, "-m", "tinyserve.make_checkpoint", "--out", str(path), *args],
        cwd=FRAMEWORKS_DIR / "tinyserve",
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise FixtureError(f"making the fixture checkpoint {path} failed: {proc.stderr.strip()[-300:]}")


def prepare(spec: SweepSpec) -> SweepSpec:
    """The spec with bundled repos made, model paths expanded and fixture checkpoints written."""
    frameworks = [
        fw.model_copy(update={"repo": str(bundled_repo(fw.repo[len(BUNDLED) :]))})
        if fw.repo and fw.repo.startswith(BUNDLED)
        else fw
        for fw in spec.frameworks
    ]
    models = []
    for model in spec.models:
        path = expand_path(model.path)
        if model.fixture:
            fixture_checkpoint(Path(path), model.fixture_args)
        models.append(model.model_copy(update={"path": path}))
    return spec.model_copy(update={"frameworks": frameworks, "models": models})
