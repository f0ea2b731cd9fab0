"""serve and bench: ONE server launch (health, smoke completion), then the benchmark against it.

The server is a live handle, so it lives on RunEnv, never in state; report stops it. A launch that
fails is diagnosed like a build (weight names, quant exclusions, CUDA-only imports) and goes back
to propose; its fix is rechecked with the cheap load check before the next launch.
"""

from __future__ import annotations

import json
from pathlib import Path

from agent.loop.nodes.budget import budget_stop, elapsed, stalled
from agent.loop.nodes.env import RunEnv
from agent.loop.nodes.load_check import _diagnosed
from agent.loop.state import PortState, StageResult, signatures
from sandboxes.health import wait_ready


def model_name(env: RunEnv) -> str:
    return env.job.model.name or Path(env.job.model.path or "").name


def _not_run(state: PortState, env: RunEnv, why: str, what: str) -> dict:
    stages = dict(state.stages)
    for stage in ("serve", "bench"):
        stages[stage] = StageResult(why, f"would run: {what}" if stage == "serve" else "")
    env.observer.emit("stage", stage="serve", status=why, detail=what)
    return {"stages": stages, "failures": [], "failure_stage": "serve"}


class PublishedService:
    """The server and its published loopback port: stopping the server closes the port too."""

    def __init__(self, service, published):
        self._service = service
        self._published = published

    def stop(self, *args, **kwargs):
        try:
            return self._service.stop(*args, **kwargs)
        finally:
            if self._published is not None:
                self._published.close()

    def __getattr__(self, name: str):
        return getattr(self._service, name)


def serve(state: PortState, env: RunEnv) -> dict:
    """Launch the server once, wait for health, send one smoke completion; keep it up for bench."""
    from tools.serve import free_port, launch_command, smoke_completion

    if not env.job.model.path:
        return _not_run(state, env, "skipped", "no model configured (model.path)")
    spec, launch = env.job.serve, env.profile.launch
    port = spec.port or free_port()
    cmd = launch_command(launch.command, model_path=env.job.model.path, port=port, tp=spec.tp, dp=spec.dp)
    if spec.extra_args:
        cmd = f"{cmd} {spec.extra_args}"
    if env.profile.serve_needs_gpu and not env.gpu:
        return _not_run(state, env, "not run: no GPU", cmd)
    counters = dict(state.counters)
    counters["launches"] += 1
    env.observer.emit("serve_started", cmd=cmd, port=port, counters=counters)
    sandbox = env.sandbox()
    # a container without network: its port answers on this machine's loopback through a relay
    published = sandbox.publish(port) if hasattr(sandbox, "publish") else None
    service = PublishedService(
        sandbox.start(cmd, name=f"server-{counters['launches']}", env=env.profile_env()), published
    )
    problem = wait_ready(
        port, health_path=launch.health_path, timeout=launch.ready_timeout_s, alive=service.alive
    )
    smoke = ""
    if problem is None:
        ok, smoke = smoke_completion("127.0.0.1", port, model_name(env), launch.smoke_prompt)
        problem = None if ok else smoke
    stages = dict(state.stages)
    if problem is None:
        env.server = service
        stages["serve"] = StageResult(
            "passed", f"ready and answered the smoke completion ({cmd})", facts={"port": port, "smoke": smoke}
        )
        env.observer.emit(
            "stage", stage="serve", status="passed", detail=stages["serve"].detail, counters=counters
        )
        return {"stages": stages, "counters": counters, "failures": [], "failure_stage": "serve"}
    service.stop()
    log = env.rundir.log_text(f"serve-{counters['launches']}", f"$ {cmd}\n" + service.logs())
    failures = _diagnosed(service.logs(), state, "server")
    history = [*state.history, signatures(failures)]
    stages["serve"] = StageResult("failed", f"{problem}; log {log}")
    env.observer.emit("stage", stage="serve", status="failed", detail=problem, counters=counters)
    env.observer.emit(
        "diagnosed",
        stage="serve",
        count=len(failures),
        kinds=sorted({f.kind for f in failures}),
        signatures=history[-1],
    )
    reason = (
        stalled(history)
        or budget_stop(state, env, "propose")
        or budget_stop(_with(state, counters), env, "serve")
    )
    return {
        "stages": stages,
        "counters": counters,
        "failures": failures,
        "failure_stage": "serve",
        "history": history,
        "stop_reason": reason,
    }


def _with(state: PortState, counters: dict, stages: dict[str, StageResult] | None = None) -> PortState:
    from dataclasses import replace

    return replace(state, counters=counters, stages=stages if stages is not None else state.stages)


def bench(state: PortState, env: RunEnv) -> dict:
    """Run the job's workload against the running server; raw JSON kept in the run dir."""
    stages = dict(state.stages)
    if not env.job.bench.enabled:
        stages["bench"] = StageResult("skipped", "bench.enabled is false")
        return {"stages": stages}
    relaunch: dict = {}
    if (env.server is None or not env.server.alive()) and state.stage("serve").status == "passed":
        relaunch = _relaunch(state, env)  # a resumed run: the process that launched the server was killed
        if env.server is None:
            return relaunch
        state = _with(state, relaunch["counters"], relaunch["stages"])
        stages = dict(state.stages)
    if env.server is None or not env.server.alive():
        serve = state.stage("serve").status
        stages["bench"] = StageResult(f"not run: no server (serve {serve})")  # e.g. a build-only job
        return {"stages": stages, **({"counters": state.counters} if relaunch else {})}
    from tools.bench import BenchConfig, request_timeout, run_bench

    spec = env.job.bench
    workload = spec.workload(vocab_size=_vocab_size(env) or 32000)
    left = env.job.budgets.wall_time_s - elapsed(state, env)  # a stuck request must not outlast the run
    cfg = BenchConfig(
        base_url=f"http://127.0.0.1:{state.stage('serve').facts['port']}",
        model=model_name(env),
        workload=workload,
        max_concurrency=spec.max_concurrency,
        timeout_s=request_timeout(workload, budget_s=left),
    )
    result = run_bench(cfg).to_json()
    result["command"] = (
        f"rocport bench --base-url {cfg.base_url} --model {cfg.model} --isl {workload.isl} "
        f"--osl {workload.osl} --num-prompts {workload.num_prompts} "
        f"--max-concurrency {spec.max_concurrency}"
    )
    path = env.rundir.path / "bench.json"
    path.write_text(json.dumps(result, indent=2, default=str))
    valid = result.get("valid", True)
    stages["bench"] = StageResult(
        "passed" if valid else "failed",
        "; ".join(result.get("invalid_reasons", [])) or "valid",
        facts={"json": str(path)},
    )
    env.observer.emit("stage", stage="bench", status=stages["bench"].status, detail=stages["bench"].detail)
    return {"stages": stages, "bench": result, **({"counters": state.counters} if relaunch else {})}


def _relaunch(state: PortState, env: RunEnv) -> dict:
    """Launch the server again for the benchmark of a resumed run (counted as a launch, within budget)."""
    stop = budget_stop(state, env, "serve")
    if stop:
        stages = {
            **state.stages,
            "bench": StageResult(
                f"not run: the server must be relaunched after the resume "
                f"but the {stop.removeprefix('budget: ')}"
            ),
        }
        return {"stages": stages, "stop_reason": stop}
    env.observer.emit("note", message="resumed before the benchmark: relaunching the server")
    update = serve(state, env)
    if env.server is None:  # it no longer comes up: its failures are reported
        update["stages"] = {**update["stages"], "bench": StageResult("not run: the relaunched server failed")}
    return update


def _vocab_size(env: RunEnv) -> int | None:
    config = Path(env.job.model.path or "", "config.json")
    if config.is_file():
        return json.loads(config.read_text()).get("vocab_size")
    return None
