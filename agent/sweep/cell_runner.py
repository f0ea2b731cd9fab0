"""One sweep cell on one night: the port loop for the first cell of a build group; each cell that
shares its build is a run of its own on that built clone, entering the graph at the load check (load,
serve, bench; no rebuild, nothing proposed)."""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from agent.sweep.cells import Cell
from agent.sweep.results import CellResult
from agent.tune.sections import with_tune

if TYPE_CHECKING:  # the port loop (LangGraph) loads when a cell runs, not when the sweep CLI starts
    from agent.loop.port import RunRecord

FIRST_RUN = "group-run.json"
"""Written into the build group's workdir by its first cell: the RunRecord of the run that built the
framework (without its events), which the later cells run on, also after the sweep is resumed."""


def job_dict(cell: Cell) -> dict:
    """The PortJob of a cell: validate-only cells propose nothing."""
    bench = cell.workload.model_dump(exclude={"name"}, exclude_defaults=True)  # a WorkloadSpec either way
    return {
        "framework": {"profile": cell.framework.profile, "repo": cell.framework.repo, "ref": cell.git_ref},
        "model": {"path": str(Path(cell.model.path).expanduser()), "name": cell.model.name},
        "target": {"arch": cell.target.arch, "image": cell.target.image},
        "strategy": "none" if cell.options.mode == "validate" else cell.options.strategy,
        "budgets": {"builds": cell.options.builds, "launches": max(1, cell.options.launches)},
        "bench": bench,
    }


def provenance(state: dict, cell: Cell) -> dict:
    from agent.version import rocport_version

    labels: dict = {}
    image_id = ""
    proc = subprocess.run(
        ["docker", "image", "inspect", cell.target.image, "--format", "{{.Id}} {{json .Config.Labels}}"],
        capture_output=True,
        text=True,
    )
    if proc.returncode == 0:
        image_id, _, raw = proc.stdout.strip().partition(" ")
        labels = json.loads(raw or "{}") or {}
    return {
        "framework_commit": state.get("base_commit", ""),
        "ref": cell.git_ref,
        "image": cell.target.image,
        "image_id": image_id,
        "compiler": labels.get("rocport.clang_version", "unknown"),
        "rocm_version": labels.get("rocport.rocm_version", "unknown"),
        "target": cell.target.arch,
        "run_id": state.get("run_id", ""),  # the dashboard links each cell to this run's report and logs
        "rocport_version": rocport_version(),
    }


def _stages(state: dict) -> dict[str, bool]:
    st = {k: v.get("status") for k, v in state.get("stages", {}).items()}
    served = st.get("serve") == "passed"
    return {
        "built": st.get("build") == "passed",
        "loaded": st.get("load") == "passed" or served,
        "served": served,
        "benchmarked": st.get("bench") == "passed",
    }


def _failures(state: dict) -> list[dict]:
    open_ = [
        {
            "kind": f["kind"],
            "signature": f.get("signature", ""),
            "message": f.get("message", ""),
            "file": f.get("file"),
        }
        for f in state.get("failures", [])
    ]
    seen = {f["signature"] for f in open_}
    return open_ + [
        {
            "kind": u["kind"],
            "signature": u["signature"],
            "message": u.get("message", ""),
            "file": u.get("file"),
        }
        for u in state.get("unfixable", [])
        if u["signature"] not in seen
    ]


def kept_patches(state: dict) -> list[dict]:
    """The kept patches of a run: who proposed each, its files and commit."""
    return [
        {"proposer": o["proposal"]["proposer"], "files": o["proposal"]["files"], "commit": o.get("commit")}
        for o in state.get("outcomes", [])
        if o.get("kept")
    ]


def result_from_state(cell: Cell, night: str, state: dict, started: float) -> CellResult:
    stages = _stages(state)
    bench = with_tune(state.get("bench"), state.get("run_id"))
    passed = all(stages.values())
    return CellResult(
        cell_key=cell.key,
        night=night,
        sweep="",
        status="passed" if passed else "failed",
        stages=stages,
        output_tok_s=(bench or {}).get("output_throughput") if stages["benchmarked"] else None,
        bench=bench,
        patches=kept_patches(state),
        failures=_failures(state),
        provenance=provenance(state, cell),
        reason="" if passed else state.get("stop_reason", ""),
        started=started,
        finished=time.time(),
    )


def run_cell(cell: Cell, night: str, workdir: Path) -> CellResult:
    """Port (or validate) the cell; later cells of a build group run on the first cell's built clone."""
    from agent.config import validate_job
    from agent.loop.port import start_port

    started = time.time()
    first = workdir / FIRST_RUN
    if first.is_file():
        return _run_on_build(first_record(json.loads(first.read_text())), cell, night, started)
    record = start_port(validate_job(job_dict(cell)))
    first.write_text(json.dumps({k: v for k, v in asdict(record).items() if k != "events"}, default=str))
    return result_from_state(cell, night, record.state, started)


def first_record(data: dict) -> RunRecord:
    """The build group's first run from its group-run.json (also the older one that held a summary)."""
    from agent.loop.port import RunRecord
    from tools.git import head

    if "state" in data:
        return RunRecord(**data)
    repo_dir = data.get("repo_dir") or ""
    built = bool(data.get("built")) and Path(repo_dir, ".git").exists()
    state = {
        "run_id": data["run_id"],
        "repo_dir": repo_dir,
        "base_commit": data.get("state_base", ""),
        "head": head(Path(repo_dir)) if built else "",
        "stages": {"build": {"status": "passed" if built else "failed"}},
    }
    return RunRecord(data["run_id"], "green" if built else "partial", state=state)


def _run_on_build(built: RunRecord, cell: Cell, night: str, started: float) -> CellResult:
    """Load, serve and bench this cell's model on the group's built clone: a run of its own through
    the port graph, entering at the load check (strategy none)."""
    from agent.config import validate_job
    from agent.loop.port import start_port

    if not _stages(built.state)["built"]:
        failed = result_from_state(cell, night, built.state, started)
        failed.reason = f"the shared build of this framework ref failed (run {built.run_id})"
        return failed
    record = start_port(validate_job({**job_dict(cell), "strategy": "none"}), built=built)
    result = result_from_state(cell, night, record.state, started)
    result.patches = kept_patches(built.state)  # the clone carries the first cell's kept patches
    return result
