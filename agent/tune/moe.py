"""Run the framework's own fused-MoE tuning script for the model's expert shapes and keep the
per-shape config JSON it writes as one commit on the run's work branch, with the evidence (the
script's own timings) in the commit message and its full output in the run's logs."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from agent.patch.fix import FixError, git
from agent.tune.spec import MoeTuning

EVIDENCE_LINES = 12


def _ident(repo: Path) -> list[str]:
    has_email = bool(git_quiet(repo, "config", "user.email"))
    return [] if has_email else ["-c", "user.name=rocport", "-c", "user.email=rocport@localhost"]


def git_quiet(repo: Path, *args: str) -> str:
    try:
        return git(repo, *args)
    except FixError:
        return ""


def commit_message(spec: MoeTuning, command: str, files: list[str], evidence: list[str]) -> str:
    """Subject: what was tuned. Body: why, how to reproduce, and the script's numbers."""
    return (
        f"Add tuned MoE kernel configs for this model's expert shapes ({len(files)} file(s))\n\n"
        "The fused-MoE kernel falls back to generic tile sizes for shapes without a config; these\n"
        "were measured on the target by the framework's own tuning script.\n\n"
        f"Command: {command}\n" + (f"Docs: {spec.doc}\n" if spec.doc else "") + "\n"
        "Evidence (tuning script output):\n" + "\n".join(f"  {line}" for line in evidence) + "\n"
    )


def _config_dir(sandbox, spec: MoeTuning) -> str | None:
    """spec.config_dir with {probe} filled from the probe command's output (None when the probe fails)."""
    if "{probe}" not in spec.config_dir:
        return spec.config_dir
    result = sandbox.run(spec.config_dir_probe or "false", timeout=300)
    value = (result.stdout or "").strip().splitlines()[-1:] if result.returncode == 0 else []
    return spec.config_dir.replace("{probe}", value[0].strip()) if value else None


def tune_moe_configs(sandbox, rundir, spec: MoeTuning, *, model_path: str, tp: int = 1, ep: int = 1) -> dict:
    """Run the tuning script, copy what it wrote into spec.config_dir, commit it; a record for the report."""
    repo = Path(rundir.repo)
    # inside the repo: the one directory every sandbox (host or container) sees at the same path
    scratch = Path(tempfile.mkdtemp(prefix=".rocport-moe-tune-", dir=repo))
    command = spec.command.format(model_path=model_path, tp=tp, ep=ep, out_dir=scratch, dtype=spec.dtype)
    record: dict = {"command": command, "files": [], "commit": None, "evidence": []}
    try:
        result = sandbox.run(command, timeout=spec.timeout_s)
        record["log"] = str(rundir.log_command("moe-tune", result))
        output = (result.stdout or "") + (result.stderr or "")
        record["evidence"] = [ln.strip() for ln in output.splitlines() if ln.strip()][-EVIDENCE_LINES:]
        written = sorted(scratch.glob(spec.output_glob))
        if result.returncode != 0 or not written:
            record["reason"] = (
                f"the tuning script exited {result.returncode}"
                if result.returncode
                else f"the tuning script wrote no {spec.output_glob} into {scratch}"
            )
            return record
        config_dir = _config_dir(sandbox, spec)
        if config_dir is None:
            record["reason"] = f"`{spec.config_dir_probe}` failed: cannot tell where the configs go"
            return record
        target = repo / config_dir
        target.mkdir(parents=True, exist_ok=True)
        for path in written:
            shutil.copyfile(path, target / path.name)
            record["files"].append(f"{config_dir}/{path.name}")
        if not git_quiet(repo, "status", "--porcelain", "--", *record["files"]):
            record["reason"] = "the configs are already committed with the same content"
            return record
        git(repo, "add", "--", *record["files"])
        git(
            repo,
            *_ident(repo),
            "commit",
            "-q",
            "-m",
            commit_message(spec, command, record["files"], record["evidence"]),
            "--",
            *record["files"],
        )
        record["commit"] = git(repo, "rev-parse", "HEAD")
        return record
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
