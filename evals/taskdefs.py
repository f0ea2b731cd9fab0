"""Eval tasks: the fixture framework plus injected faults, and what success means.

A task is evals/tasks/<name>.yaml (format in evals/tasks/README.md). `materialize` turns it into a fresh
git repo whose single commit is the faulty starting point the agent works from.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from agent.yamlconf import load_yaml_model
from tools import fixture_frameworks
from tools import git as gitops
from tools.records import KINDS

EVALS_DIR = Path(__file__).resolve().parent
TASKS_DIR = EVALS_DIR / "tasks"
FRAMEWORKS_DIR = fixture_frameworks.FRAMEWORKS_DIR
SUCCESS_CRITERIA = ("rocm_build", "cuda_build", "server_loads", "smoke", "bench_valid")
_GIT_ENV = {
    "GIT_AUTHOR_NAME": "rocport-evals",
    "GIT_AUTHOR_EMAIL": "evals@rocport.invalid",
    "GIT_COMMITTER_NAME": "rocport-evals",
    "GIT_COMMITTER_EMAIL": "evals@rocport.invalid",
}


class TaskError(ValueError):
    """A task is unknown or malformed, or its patches do not apply; the message says which and why."""


class ExpectedFailure(BaseModel):
    """One failure the faulty starting point must show before any fix."""

    model_config = ConfigDict(extra="forbid")
    kind: str
    """A kind from tools.records.KINDS (FAILURE_CLASSES.md)."""
    stage: Literal["build", "load", "launch", "scan"]
    """Where it shows: the ROCm build log, the model load (expected_params / server log), the launch, a scan."""
    log_contains: str
    """A substring the stage's log must contain (the real compiler/loader message); for scan, the source."""
    patch: str | None = None
    """The injected fault patch that causes it (revert it to see what it masks)."""
    file: str | None = None
    """Repo-relative file the error points at, when there is one."""
    symbol: str | None = None
    """The header, identifier, weight name or module, as the shared Failure convention defines it."""

    @field_validator("kind")
    @classmethod
    def _known_kind(cls, kind: str) -> str:
        if kind not in KINDS:
            raise ValueError(f"unknown failure kind {kind!r}")
        return kind


class BenchSpec(BaseModel):
    """The small benchmark run once the server serves (token-id prompts, shared-prefix groups)."""

    model_config = ConfigDict(extra="forbid")
    num_prompts: int = 16
    input_len: int = 128
    output_len: int = 8
    prefix_hit: float = 0.5
    concurrency: int = 4


class Task(BaseModel):
    """A porting task on the fixture framework."""

    model_config = ConfigDict(extra="forbid")
    name: str
    description: str
    framework: str = "tinyserve"
    profile: str = "tinyserve"
    image: str = "rocport/rocm-build:6.4"
    target_arch: str = "gfx942"
    patches: list[str] = Field(default_factory=list)
    """Fault patches, relative to evals/tasks/, applied in order to the clean framework."""
    checkpoint_args: list[str] = Field(default_factory=list)
    """Extra arguments for `python3 -m tinyserve.make_checkpoint --out DIR`."""
    launch_args: str = ""
    """Extra server flags appended to the profile's launch command (a bad flag makes a serve_flag task)."""
    expected_failures: list[ExpectedFailure]
    success: list[Literal["rocm_build", "cuda_build", "server_loads", "smoke", "bench_valid"]]
    rule_fixable: bool
    """True when rocport's rules alone should resolve it; False needs the LLM (or a decline)."""
    expect: Literal["resolve", "decline"]
    """resolve: reach every success criterion. decline: report the environment problem, patch nothing."""
    bench: BenchSpec = Field(default_factory=BenchSpec)
    reference_fix: list[str] = Field(default_factory=list)
    """Known-good fix patches (relative to evals/tasks/) for tasks whose fix is not just the clean copy;
    applied on top of the starting point they make the ROCm and CUDA builds green. Never shown to the agent."""

    @property
    def kinds(self) -> list[str]:
        """The failure kinds this task exercises, in order, without repeats."""
        return list(dict.fromkeys(f.kind for f in self.expected_failures))

    @property
    def framework_dir(self) -> Path:
        return FRAMEWORKS_DIR / self.framework

    def failures_at(self, stage: str) -> list[ExpectedFailure]:
        """Expected failures of one stage, in the order they show (later ones masked by earlier ones)."""
        return [f for f in self.expected_failures if f.stage == stage]

    def checkpoint_command(self, out: str) -> str:
        """The command (run from the repo root) that writes this task's checkpoint to `out`."""
        return shlex.join(["python3", "-m", "tinyserve.make_checkpoint", "--out", out, *self.checkpoint_args])


def task_names() -> list[str]:
    return sorted(p.stem for p in TASKS_DIR.glob("*.yaml"))


def load_task(name_or_path: str) -> Task:
    """A bundled task by name, or any task YAML by path."""
    path = Path(name_or_path)
    if path.suffix not in (".yaml", ".yml"):
        path = TASKS_DIR / f"{name_or_path}.yaml"
    if not path.is_file():
        raise TaskError(f"no task {name_or_path!r}: use one of {', '.join(task_names())} or a task YAML path")
    task = load_yaml_model(path, Task, error=TaskError, what="a task YAML")
    for patch in task.patches + task.reference_fix:
        if not (TASKS_DIR / patch).is_file():
            raise TaskError(f"{path}: patch {patch} not found under {TASKS_DIR}")
    for failure in task.expected_failures:
        if failure.patch is not None and failure.patch not in task.patches:
            raise TaskError(
                f"{path}: expected failure {failure.kind} names patch {failure.patch}, "
                f"which the task does not apply"
            )
    return task


def copy_framework(framework: str, dest: Path) -> Path:
    """Copy the clean framework tree (no build outputs) to `dest`, which must not exist yet."""
    try:
        return fixture_frameworks.copy_framework(framework, dest)
    except fixture_frameworks.FixtureFrameworkError as exc:
        raise TaskError(str(exc)) from None


def _git(dest: Path, *args: str) -> subprocess.CompletedProcess:
    return gitops.run(dest, *args, env=_GIT_ENV, ok=range(256))


def materialize(task: Task, dest: str | os.PathLike) -> Path:
    """Make `dest` a fresh git repo (branch main) holding the framework with the task's faults applied.

    One commit, so the history does not give away the clean state.
    """
    dest = copy_framework(task.framework, Path(dest))
    _git(dest, "init", "-q", "-b", "main")
    for patch in task.patches:
        result = _git(dest, "apply", "--whitespace=nowarn", str(TASKS_DIR / patch))
        if result.returncode != 0:
            raise TaskError(
                f"task {task.name}: patch {patch} does not apply to the clean "
                f"{task.framework}: {result.stderr.strip()}"
            )
    _git(dest, "add", "-A")
    result = _git(dest, "commit", "-q", "-m", f"{task.framework}: starting point of eval task {task.name}")
    if result.returncode != 0:
        raise TaskError(f"task {task.name}: git commit failed in {dest}: {result.stderr.strip()}")
    return dest
