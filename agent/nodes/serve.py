"""serve and bench: ONE server launch (health, smoke completion), then the benchmark against it.

The server is a live handle, so it lives on RunEnv, never in state; report stops it. A launch that
fails is diagnosed like a build (weight names, quant exclusions, CUDA-only imports) and goes back
to propose; its fix is rechecked with the cheap load check before the next launch.
"""
from __future__ import annotations

import json
import socket
from pathlib import Path

from agent.nodes.budget import budget_stop, stalled
from agent.nodes.env import RunEnv
from agent.nodes.load_check import _diagnosed
from agent.state import PortState, signatures


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def model_name(env: RunEnv) -> str:
    return env.job.model.name or Path(env.job.model.path).name


def _not_run(state: PortState, env: RunEnv, why: str, what: str) -> dict:
    stages = dict(state.stages)
    for stage in ("serve", "bench"):
        stages[stage] = {"status": why, "detail": f"would run: {what}" if stage == "serve" else ""}
    env.observer.emit("stage", stage="serve", status=why, detail=what)
    return {"stages": stages, "failures": [], "failure_stage": "serve"}


def launch_command(env: RunEnv, port: int) -> str:
    spec = env.job.serve
    return env.profile.launch.command.format(model_path=env.job.model.path, port=port, tp=spec.tp, dp=spec.dp,
                                             host="127.0.0.1")


def serve(state: PortState, env: RunEnv) -> dict:
    """Launch the server once, wait for health, send one smoke completion; keep it up for bench."""
    if not env.job.model.path:
        return _not_run(state, env, "skipped", "no model configured (model.path)")
    port = env.job.serve.port or free_port()
    cmd = launch_command(env, port)
    if env.profile.serve_needs_gpu and not env.gpu:
        return _not_run(state, env, "not run: no GPU", cmd)
    from tools.serve import launch_server  # engineer W: launch, health wait, smoke, stop

    counters = dict(state.counters)
    counters["launches"] += 1
    stages = dict(state.stages)
    env.observer.emit("serve_started", cmd=cmd, port=port, counters=counters)
    outcome = launch_server(env.sandbox(), env.profile, cmd, port=port, model=model_name(env))
    log = env.rundir.log_text(f"serve-{counters['launches']}", outcome.log)
    if outcome.ok:
        env.server = outcome.server
        stages["serve"] = {"status": "passed", "detail": f"{outcome.detail}; log {log}", "port": port,
                           "smoke": outcome.smoke}
        env.observer.emit("stage", stage="serve", status="passed", detail=outcome.detail, counters=counters)
        return {"stages": stages, "counters": counters, "failures": [], "failure_stage": "serve"}
    failures = _diagnosed(outcome.log, state, "server")
    history = [*state.history, signatures(failures)]
    stages["serve"] = {"status": "failed", "detail": f"{outcome.detail}; log {log}"}
    env.observer.emit("stage", stage="serve", status="failed", detail=outcome.detail, counters=counters)
    env.observer.emit("diagnosed", stage="serve", count=len(failures), kinds=sorted({f["kind"] for f in failures}),
                      signatures=history[-1])
    reason = stalled(history) or budget_stop(state, env, "propose") or budget_stop(
        _with(state, counters), env, "serve")
    return {"stages": stages, "counters": counters, "failures": failures, "failure_stage": "serve",
            "history": history, "stop_reason": reason}


def _with(state: PortState, counters: dict) -> PortState:
    from dataclasses import replace
    return replace(state, counters=counters)


def bench(state: PortState, env: RunEnv) -> dict:
    """Run the job's workload against the running server; raw JSON kept in the run dir."""
    stages = dict(state.stages)
    if not env.job.bench.enabled:
        stages["bench"] = {"status": "skipped", "detail": "bench.enabled is false"}
        return {"stages": stages}
    if env.server is None or not env.server.alive():
        stages["bench"] = {"status": "not run: the server is not running in this process (resumed run?)"}
        return {"stages": stages}
    from tools.bench import run_for_port  # engineer B: workload -> validated result dict

    port = state.stages["serve"]["port"]
    result = run_for_port(f"http://127.0.0.1:{port}", model_name(env), env.job.bench.model_dump(),
                          vocab_size=_vocab_size(env))
    path = env.rundir.path / "bench.json"
    path.write_text(json.dumps(result, indent=2, default=str))
    valid = result.get("valid", True)
    stages["bench"] = {"status": "passed" if valid else "failed", "json": str(path),
                       "detail": "; ".join(result.get("invalid_reasons", [])) or "valid"}
    env.observer.emit("stage", stage="bench", status=stages["bench"]["status"], detail=stages["bench"]["detail"])
    return {"stages": stages, "bench": result}


def _vocab_size(env: RunEnv) -> int | None:
    config = Path(env.job.model.path, "config.json")
    if config.is_file():
        return json.loads(config.read_text()).get("vocab_size")
    return None
