"""One sweep cell on one night: the port loop for the first cell of a build group, the validate
stages alone (load, serve, bench on the already built clone) for the cells that share its build."""
from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from agent.sweep.cells import Cell
from agent.sweep.results import CellResult
from agent.tune.sections import with_tune

FIRST_RUN = "group-run.json"
"""Written into the build group's workdir by its first cell: which run built the framework."""


def job_dict(cell: Cell) -> dict:
    """The PortJob of a cell: validate-only cells propose nothing."""
    wl = cell.workload
    bench = {"preset": wl.preset} if wl.preset else {
        "isl": wl.isl, "osl": wl.osl, "num_prompts": wl.num_prompts, "max_concurrency": wl.max_concurrency,
        "cache_hit_rate": wl.cache_hit_rate}
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
    proc = subprocess.run(["docker", "image", "inspect", cell.target.image, "--format",
                           "{{.Id}} {{json .Config.Labels}}"], capture_output=True, text=True)
    if proc.returncode == 0:
        image_id, _, raw = proc.stdout.strip().partition(" ")
        labels = json.loads(raw or "{}") or {}
    return {"framework_commit": state.get("base_commit", ""), "ref": cell.git_ref, "image": cell.target.image,
            "image_id": image_id, "compiler": labels.get("rocport.clang_version", "unknown"),
            "rocm_version": labels.get("rocport.rocm_version", "unknown"), "target": cell.target.arch,
            "run_id": state.get("run_id", ""),  # the dashboard links each cell to this run's report and logs
            "rocport_version": rocport_version()}


def _stages(state: dict) -> dict[str, bool]:
    st = {k: v.get("status") for k, v in state.get("stages", {}).items()}
    served = st.get("serve") == "passed"
    return {"built": st.get("build") == "passed", "loaded": st.get("load") == "passed" or served,
            "served": served, "benchmarked": st.get("bench") == "passed"}


def _failures(state: dict) -> list[dict]:
    open_ = [{"kind": f["kind"], "signature": f.get("signature", ""), "message": f.get("message", ""),
              "file": f.get("file")} for f in state.get("failures", [])]
    seen = {f["signature"] for f in open_}
    return open_ + [{"kind": u["kind"], "signature": u["signature"], "message": u.get("message", ""),
                     "file": u.get("file")} for u in state.get("unfixable", []) if u["signature"] not in seen]


def result_from_state(cell: Cell, night: str, state: dict, started: float) -> CellResult:
    stages = _stages(state)
    bench = with_tune(state.get("bench"), state.get("run_id"))
    passed = all(stages.values())
    return CellResult(
        cell_key=cell.key, night=night, sweep="", status="passed" if passed else "failed", stages=stages,
        output_tok_s=(bench or {}).get("output_throughput") if stages["benchmarked"] else None, bench=bench,
        patches=[{"proposer": o["proposal"]["proposer"], "files": o["proposal"]["files"], "commit": o.get("commit")}
                 for o in state.get("outcomes", []) if o.get("kept")],
        failures=_failures(state), provenance=provenance(state, cell),
        reason="" if passed else state.get("stop_reason", ""), started=started, finished=time.time())


def run_cell(cell: Cell, night: str, workdir: Path) -> CellResult:
    """Port (or validate) the cell; later cells of a build group reuse the first cell's built clone."""
    started = time.time()
    first = workdir / FIRST_RUN
    if first.is_file():
        return _validate_on(json.loads(first.read_text()), cell, night, started)
    from agent.config import validate_job
    from agent.port import start_port
    from agent.rundir import RunDir

    result = start_port(validate_job(job_dict(cell)))
    state = json.loads((RunDir(result.run_id).path / "state.json").read_text())
    first.write_text(json.dumps({"run_id": result.run_id, "repo_dir": state.get("repo_dir"),
                                 "built": _stages(state)["built"], "state_base": state.get("base_commit")}))
    return result_from_state(cell, night, state, started)


def _validate_on(group: dict, cell: Cell, night: str, started: float) -> CellResult:
    """Load, serve and bench this cell's model on the group's already built clone, no rebuild."""
    from agent.rundir import RunDir

    state = json.loads((RunDir(group["run_id"]).path / "state.json").read_text())
    if not group["built"]:
        failed = result_from_state(cell, night, state, started)
        failed.reason = f"the shared build of this framework ref failed (run {group['run_id']})"
        return failed
    from agent.sweep.validate import validate_built
    stages, bench, failures = validate_built(Path(group["repo_dir"]), cell)
    view = {**state, "stages": {"build": {"status": "passed"}, **stages}, "bench": bench, "failures": failures,
            "unfixable": [], "stop_reason": "; ".join(f["message"][:120] for f in failures)}
    return result_from_state(cell, night, view, started)
