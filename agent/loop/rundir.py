"""One directory per run under $ROCPORT_HOME/runs/<run_id>: job, events, command logs, patches, report.

```
job.yaml        the job as validated (no secrets)
events.jsonl    every observer event, one JSON object a line
logs/           NNN-<what>.log: every command the loop ran, with its exit code and duration
patches/        NNN-<kind>-<kept|reverted>.patch: every proposal that was tried
cuda-cache/     nvcc's compile cache, kept so a CUDA build of the final tree reuses the CUDA checks
repo/           the run's clone of the framework (work branch rocport/port-<run_id>)
report.md       the report (report.json beside it)
```
"""

from __future__ import annotations

import json
import os
import re
import secrets
import time
from pathlib import Path

from sandboxes.base import CommandResult


def rocport_home() -> Path:
    """$ROCPORT_HOME, default ~/.rocport; created on first use."""
    home = Path(os.environ.get("ROCPORT_HOME") or Path.home() / ".rocport")
    home.mkdir(parents=True, exist_ok=True)
    return home


def new_run_id(framework: str) -> str:
    """Sortable and unique: 20261202-153901-tinyserve-3fa2."""
    slug = re.sub(r"[^a-z0-9]+", "-", framework.lower()).strip("-")[:24] or "run"
    return f"{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-{slug}-{secrets.token_hex(2)}"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-")[:60] or "x"


class RunDir:
    """Paths and writers of one run's directory."""

    def __init__(self, run_id: str, home: Path | None = None):
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", run_id):
            raise ValueError(f"bad run id {run_id!r}: use the id `rocport runs` prints")
        self.run_id = run_id
        self.path = (home or rocport_home()) / "runs" / run_id
        self.logs = self.path / "logs"
        self.patches = self.path / "patches"

    @property
    def repo(self) -> Path:
        return self.path / "repo"

    @property
    def cuda_cache(self) -> Path:
        """nvcc's compile cache, kept after the run: a CUDA build of the final tree reuses it."""
        return self.path / "cuda-cache"

    @property
    def events(self) -> Path:
        return self.path / "events.jsonl"

    def llm_consulted(self) -> bool:
        """Whether the run ever asked an LLM (its `proposed` events, resumes included): its sandbox may then
        have run what the LLM wrote, and its caches are not shared with other runs."""
        try:
            lines = self.events.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return True  # no record: assume the worst
        for line in lines:
            if '"proposed"' not in line:
                continue
            try:
                event = json.loads(line)
            except ValueError:
                return True
            counters = event.get("counters") or {}
            if counters.get("llm_calls") or any(
                not str(p).startswith("rule:") for p in event.get("by") or []
            ):
                return True
        return False

    @property
    def job_file(self) -> Path:
        return self.path / "job.yaml"

    def exists(self) -> bool:
        return self.job_file.is_file()

    def create(self, job_yaml: str) -> None:
        for p in (self.path, self.logs, self.patches):
            p.mkdir(parents=True, exist_ok=True)
        self.job_file.write_text(job_yaml)

    def _next(self, folder: Path) -> int:
        """One past the highest NNN- number there: a running command's hidden `.run-*` files and the
        heartbeat come and go in logs/, so counting files could hand out a number twice."""
        numbers = [int(m.group(1)) for p in folder.iterdir() if (m := re.match(r"(\d+)-", p.name))]
        return max(numbers, default=0) + 1

    def log_command(self, what: str, result: CommandResult) -> Path:
        """Write one command's full output; returns the log path (for reports and failures)."""
        self.logs.mkdir(parents=True, exist_ok=True)
        path = self.logs / f"{self._next(self.logs):03d}-{_slug(what)}.log"
        header = (
            f"$ {result.cmd}\n# exit {result.returncode}{' (timed out)' if result.timed_out else ''}"
            f", {result.duration_s:.1f}s\n"
        )
        path.write_text(header + result.output)
        return path

    def log_text(self, what: str, text: str) -> Path:
        self.logs.mkdir(parents=True, exist_ok=True)
        path = self.logs / f"{self._next(self.logs):03d}-{_slug(what)}.log"
        path.write_text(text)
        return path

    def save_patch(self, kind: str, verdict: str, diff: str) -> Path:
        self.patches.mkdir(parents=True, exist_ok=True)
        path = self.patches / f"{self._next(self.patches):03d}-{_slug(kind)}-{verdict}.patch"
        path.write_text(diff)
        return path

    def append_event(self, event: dict) -> None:
        with self.events.open("a") as fh:
            fh.write(json.dumps(event, default=str) + "\n")
