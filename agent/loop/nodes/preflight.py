"""preflight: probe the run's image for what the profile's build needs, before the first full build.

A missing requirement stops the run here with the probe's table in the report (what is missing, which
image provides it, what still runs); under `--until unit` only what the unit compiles need stops it.
"""

from __future__ import annotations

from agent.loop.nodes.env import RunEnv
from agent.loop.state import PortState, StageResult


def preflight(state: PortState, env: RunEnv) -> dict:
    """Probe the image (python, pip, ROCm PyTorch, build tools, hipcc); stop with a verdict when lacking."""
    from agent.loop.preflight import evaluate, parse_probe, probe_command

    result, log = env.run("preflight", probe_command(env.profile), timeout=120)
    pre = evaluate(env.profile, env.image(), parse_probe(result.stdout))
    stages = dict(state.stages)
    stages["preflight"] = StageResult(
        "passed" if pre.ready else "failed", pre.verdict(), str(log), pre.to_dict()
    )
    env.observer.emit(
        "preflight", verdict=pre.verdict(), ready=pre.ready, checks=[c.__dict__ for c in pre.checks]
    )
    update: dict = {"stages": stages}
    units_only = env.job.until == "unit" and pre.units_ready
    if not pre.ready and not units_only:
        update["stop_reason"] = f"preflight: {pre.verdict()}"
    return update
