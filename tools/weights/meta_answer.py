"""Run tools/weights/meta_model.py in a framework venv and read its one JSON answer."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from sandboxes.environ import sandbox_environ
from tools.weights.checkpoint import CheckpointError

META_MODEL = Path(__file__).with_name("meta_model.py")
META_TIMEOUT_S = 900


def run_meta_model(
    python: str, framework: str, checkpoint: Path, source: Path | None = None
) -> dict[str, Any]:
    """The model-class answer ({"source": "model-class", ...}) or the blocked record; never raises on a block.
    With `source` (the framework clone) its Python code is what gets imported and built."""
    root = checkpoint if checkpoint.is_dir() else checkpoint.parent
    cmd = [python, str(META_MODEL), "--framework", framework, "--model-path", str(root), "--with-draft"]
    if source is not None:
        cmd += ["--source", str(source)]
    try:
        # the framework's own code runs here: it gets the sandbox allow-list, never the host's secrets
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=META_TIMEOUT_S, check=False, env=sandbox_environ()
        )
    except FileNotFoundError as exc:
        raise CheckpointError(
            f"{python}: no such Python; pass --framework-python (a venv with torch and "
            f"{framework}) or set ROCPORT_FRAMEWORK_PYTHON"
        ) from exc
    except subprocess.TimeoutExpired:
        return {"source": "blocked", "framework": framework, "error": f"timed out after {META_TIMEOUT_S}s"}
    lines = proc.stdout.strip().splitlines()
    try:
        answer = json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        answer = None
    if not isinstance(answer, dict):
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"source": "blocked", "framework": framework, "error": f"exit {proc.returncode}: {last}"[:500]}
    return answer
