"""The chosen configuration as YAML a user pastes: a job snippet and the profile's env."""

from __future__ import annotations

import yaml

from agent.tune.candidates import Candidate


def job_snippet(cand: Candidate, extra_args: str) -> str:
    """`serve:` of a rocport job that launches this candidate."""
    serve: dict[str, int | str] = {"tp": cand.split.tp, "dp": cand.split.dp}
    if extra_args:
        serve["extra_args"] = extra_args
    return yaml.safe_dump({"serve": serve}, sort_keys=False).strip()


def profile_snippet(env: dict[str, str]) -> str:
    """`env:` entries for the framework profile (empty when the candidate sets none)."""
    return yaml.safe_dump({"env": dict(sorted(env.items()))}, sort_keys=False).strip() if env else ""
