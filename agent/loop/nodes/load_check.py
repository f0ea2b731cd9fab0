"""load_check: the cheap check before any server launch — does the checkpoint load into the model?

Uses the profile's `load_check` command (loads weights without serving; its traceback is diagnosed),
else its `expected_params` hook (the model code imports; the registered parameter names).
"""

from __future__ import annotations

import json

from agent.loop.nodes.budget import budget_stop, stalled
from agent.loop.nodes.build import diagnose_log
from agent.loop.nodes.env import RunEnv
from agent.loop.state import PortState, StageResult, signatures
from tools.records import Failure


def _expected_failures(state: PortState, env: RunEnv, what: str) -> tuple[list[Failure], str, str | None]:
    """Run the expected_params hook: it imports the model code (a CUDA-only import fails here, cheaply)
    and lists the registered parameters the weight-name fixers compare with the checkpoint."""
    from tools.weights.compare import parse_expected

    # the caller checked both: a profile with the hook, a job with a model
    cmd = (env.profile.expected_params or "").replace("{model_path}", env.job.model.path or "")
    result, log = env.run(what, cmd, timeout=900)
    if not result.ok:
        return _diagnosed(result.output, state, "python"), f"expected_params failed; log {log}", None
    expected = parse_expected(json.loads(result.stdout), cmd)
    path = env.rundir.path / "expected_params.json"
    path.write_text(json.dumps(expected))
    # Registered names differ from checkpoint names by the loader's own mapping (stacked qkv, ...),
    # so a raw comparison is no verdict: loading itself is checked by load_check or the launch.
    return [], f"model code imports; {len(expected)} registered params listed; log {log}", str(path)


def _diagnosed(text: str, state: PortState, source: str) -> list[Failure]:
    failures = diagnose_log(text, state.repo_dir)
    if not failures:
        failures = [
            Failure(
                kind="python_error",
                message=text.strip().splitlines()[-1][:300] if text.strip() else "failed without output",
                excerpt=text[-2000:],
                signature=f"python_error:{source}",
                source=source,
            )
        ]
    return failures


def run_load_check(state: PortState, env: RunEnv, what: str = "load-check") -> tuple[list[Failure], str]:
    """(failures, detail) of one load check; [] when the checkpoint loads."""
    profile, model = env.profile, env.job.model.path or ""
    if profile.load_check:
        cmd = profile.load_check.replace("{model_path}", model)
        result, log = env.run(what, cmd, timeout=profile.launch.ready_timeout_s)
        if result.ok:
            return [], f"loads ({cmd}); log {log}"
        return _diagnosed(result.output, state, "load_check"), f"exit {result.returncode}; log {log}"
    failures, detail, _ = _expected_failures(state, env, what)
    return failures, detail


def load_check(state: PortState, env: RunEnv) -> dict:
    """Check the checkpoint against the model before the one server launch."""
    stages = dict(state.stages)
    if not env.job.model.path:
        stages["load"] = StageResult("skipped", "no model configured (model.path)")
        return {"stages": stages, "failures": [], "failure_stage": "load"}
    if env.profile.serve_needs_gpu and not env.gpu:
        stages["load"] = StageResult(
            "not run: no GPU", f"would run: {env.profile.load_check or 'the server'}"
        )
        return {"stages": stages, "failures": [], "failure_stage": "load"}
    if not env.profile.load_check and not env.profile.expected_params:
        stages["load"] = StageResult(
            "skipped",
            "the profile has no load_check or expected_params hook; the server launch checks loading",
        )
        return {"stages": stages, "failures": [], "failure_stage": "load"}
    counters = dict(state.counters)
    counters["load_checks"] += 1
    if env.profile.expected_params and env.profile.load_check:
        _expected_failures(state, env, "expected-params")  # the weight fixers read expected names
    failures, detail = run_load_check(state, env)
    expected = env.rundir.path / "expected_params.json"
    stages["load"] = StageResult(
        "failed" if failures else "passed",
        detail,
        facts={"expected_params": str(expected)} if expected.is_file() else {},
    )
    history = [*state.history, signatures(failures)] if failures else state.history
    env.observer.emit("stage", stage="load", status=stages["load"].status, detail=detail, counters=counters)
    if failures:
        env.observer.emit(
            "diagnosed",
            stage="load",
            count=len(failures),
            kinds=sorted({f.kind for f in failures}),
            signatures=history[-1],
        )
    update = {
        "stages": stages,
        "failures": failures,
        "failure_stage": "load",
        "history": history,
        "counters": counters,
    }
    if failures:
        update["stop_reason"] = stalled(history) or budget_stop(state, env, "propose")
    return update
