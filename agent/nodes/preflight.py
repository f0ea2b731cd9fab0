"""preflight: probe the run's image for what the profile's build needs, before the first full build.

A missing requirement stops the run here with the probe's table in the report (what is missing, which
image provides it, what still runs); `--until unit` stops here on purpose.
"""
from __future__ import annotations

from agent.nodes.env import RunEnv
from agent.state import PortState


def preflight(state: PortState, env: RunEnv) -> dict:
    """Probe the image (python, pip, ROCm PyTorch, build tools, hipcc); stop with a verdict when lacking."""
    from agent.preflight import evaluate, parse_probe, probe_command

    result, log = env.run("preflight", probe_command(env.profile), timeout=120)
    pre = evaluate(env.profile, env.image(), parse_probe(result.stdout))
    stages = dict(state.stages)
    stages["preflight"] = {"status": "passed" if pre.ready else "failed", "detail": pre.verdict(),
                           "log": str(log), **pre.to_dict()}
    env.observer.emit("preflight", verdict=pre.verdict(), ready=pre.ready,
                      checks=[c.__dict__ for c in pre.checks])
    update: dict = {"stages": stages}
    if not pre.ready:
        update["stop_reason"] = f"preflight: {pre.verdict()}"
    return update
