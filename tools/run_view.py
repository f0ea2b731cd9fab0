"""A run directory as the report and the PR read it: state.json, events.jsonl and job.yaml.

Reads only the run directory, so any finished or stopped run can be reported again later, on any
machine; a damaged directory is a ReportError saying what to do.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class ReportError(ValueError):
    """The run directory cannot be reported; the message says what is missing."""


@dataclass
class RunView:
    """A run as the report sees it."""

    run_id: str
    path: Path
    state: dict[str, Any]
    events: list[dict[str, Any]] = field(default_factory=list)
    job_yaml: str = ""

    @property
    def job(self) -> dict[str, Any]:
        """The run's job.yaml as data ({} when missing or unreadable)."""
        import yaml

        try:
            job = yaml.safe_load(self.job_yaml or "") or {}
        except yaml.YAMLError:
            return {}
        return job if isinstance(job, dict) else {}

    @classmethod
    def load(cls, run_dir: Path) -> RunView:
        state_file = run_dir / "state.json"
        if not state_file.is_file():
            raise ReportError(
                f"{run_dir} has no state.json: the run never got past checkout; "
                f"resume it with `rocport port --resume {run_dir.name}`"
            )
        events = []
        if (run_dir / "events.jsonl").is_file():
            lines = [
                ln for ln in (run_dir / "events.jsonl").read_text(errors="replace").splitlines() if ln.strip()
            ]
            for i, line in enumerate(lines):
                try:
                    events.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    if i == len(lines) - 1:
                        break  # a process killed mid-append leaves a torn last line; the rest is intact
                    raise ReportError(
                        f"{run_dir / 'events.jsonl'} line {i + 1} is not JSON ({exc.msg}): "
                        f"the run directory was edited or damaged"
                    ) from exc
        try:
            state = json.loads(state_file.read_text(errors="replace"))
        except json.JSONDecodeError as exc:
            raise ReportError(
                f"{state_file} is not JSON ({exc.msg}): the run directory is damaged; port "
                f"again with `rocport port -c {run_dir / 'job.yaml'}`"
            ) from exc
        job = (run_dir / "job.yaml").read_text() if (run_dir / "job.yaml").is_file() else ""
        return cls(run_dir.name, run_dir, state, events, job)
