"""Run a GitHub Actions job's steps on this machine the way a self-hosted runner does, for the workflow
example's test: `run:` scripts through `bash --noprofile --norc -eo pipefail` with the workflow, job and
step env (`${{ }}` expressions of the forms the example uses), GITHUB_PATH / GITHUB_STEP_SUMMARY files,
`if: always()` after a failure. The `uses:` actions are stood in for by what they do to the disk:
checkout (the workspace; rocport's source at `path:`), cache restore/save (a folder per key),
upload-artifact (every listed path must exist)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

_EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


@dataclass
class Runner:
    """One machine's runner: a work folder holding the workspace, RUNNER_TEMP and the action cache."""

    work: Path
    source: Path
    """What `actions/checkout` with a `path:` brings (rocport's source tree)."""
    install: Path
    """The bin folder the install step puts on GITHUB_PATH (stood in for: see StepResult.stood_in)."""
    contexts: dict = field(default_factory=dict)

    @property
    def workspace(self) -> Path:
        return self.work / "repo" / "repo"

    def expand(self, text: str, env: dict[str, str]) -> str:
        """`${{ a.b || 'x' }}` with the github/vars/secrets/env contexts (missing is empty)."""

        def value(expr: str) -> str:
            for operand in (o.strip() for o in expr.split("||")):
                if operand.startswith("'"):
                    got = operand.strip("'")
                else:
                    ctx, _, name = operand.partition(".")
                    got = env.get(name, "") if ctx == "env" else str(self.contexts.get(ctx, {}).get(name, ""))
                if got:
                    return got
            return ""

        return _EXPR.sub(lambda m: value(m.group(1)), str(text))


@dataclass
class StepResult:
    name: str
    ran: bool
    code: int = 0
    output: str = ""
    stood_in: bool = False
    """A `uses:` action (or the install step) whose effect was reproduced instead of run."""


def run_job(
    runner: Runner, workflow: dict, job: str, overrides: dict[str, str] | None = None
) -> list[StepResult]:
    """Run every step of `job` in order; a failed step skips the rest except `if: always()` ones."""
    runner.workspace.mkdir(parents=True, exist_ok=True)
    temp = runner.work / "_temp"
    temp.mkdir(exist_ok=True)
    files = {name: temp / name.lower() for name in ("GITHUB_PATH", "GITHUB_STEP_SUMMARY", "GITHUB_ENV")}
    for f in files.values():
        f.write_text("")
    base = {
        "PATH": os.environ["PATH"],
        "HOME": os.environ.get("HOME", "/root"),
        "GITHUB_WORKSPACE": str(runner.workspace),
        "RUNNER_TEMP": str(temp),
        **{k: str(v) for k, v in files.items()},
    }
    runner.contexts["github"] = {"workspace": str(runner.workspace), **runner.contexts.get("github", {})}
    env = dict(base)
    for key, val in {**workflow.get("env", {}), **workflow["jobs"][job].get("env", {})}.items():
        env[key] = runner.expand(val, env)
    env.update(overrides or {})
    results, failed = [], False
    for step in workflow["jobs"][job]["steps"]:
        name = step.get("name") or step.get("uses") or step["run"].splitlines()[0]
        if failed and "always()" not in str(step.get("if", "")):
            results.append(StepResult(name, ran=False))
            continue
        step_env = {**env, **{k: runner.expand(v, env) for k, v in step.get("env", {}).items()}}
        extra = [p for p in files["GITHUB_PATH"].read_text().splitlines() if p]
        step_env["PATH"] = ":".join([*reversed(extra), env["PATH"]])
        result = _uses(runner, step, step_env) if "uses" in step else _run(runner, name, step, step_env)
        results.append(result)
        failed = failed or result.code != 0
    return results


def _run(runner: Runner, name: str, step: dict, env: dict[str, str]) -> StepResult:
    script = runner.expand(step["run"], env)
    if "pip" in script and "install" in script:  # a fresh venv from PyPI: minutes; its effect instead
        Path(env["GITHUB_PATH"]).write_text(f"{runner.install}\n")
        return StepResult(name, ran=True, stood_in=True)
    proc = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
        cwd=runner.workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    return StepResult(name, ran=True, code=proc.returncode, output=proc.stdout + proc.stderr)


def _uses(runner: Runner, step: dict, env: dict[str, str]) -> StepResult:
    action = step["uses"].split("@")[0]
    args = {k: runner.expand(v, env) for k, v in step.get("with", {}).items()}
    name = step.get("name") or step["uses"]
    store = runner.work.parent / "_actions_cache"
    if action == "actions/checkout" and args.get("path"):
        target = runner.workspace / args["path"]
        if not target.exists():
            target.symlink_to(runner.source, target_is_directory=True)
    elif action == "actions/cache/restore":
        hits = sorted(store.glob(args.get("restore-keys", args["key"]).strip() + "*"))
        if hits:
            shutil.copytree(hits[-1], args["path"], dirs_exist_ok=True)
    elif action == "actions/cache/save":
        shutil.copytree(args["path"], store / args["key"], dirs_exist_ok=True)
    elif action == "actions/upload-artifact":
        missing = [p for p in args["path"].split() if not (runner.workspace / p).exists()]
        if missing:
            return StepResult(
                name, ran=True, code=1, output=f"no such artifact path: {missing}", stood_in=True
            )
    return StepResult(name, ran=True, stood_in=True)
