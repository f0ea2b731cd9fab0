"""build and diagnose: one keep-going ROCm build in the sandbox, then its log turned into failures."""

from __future__ import annotations

from pathlib import Path

from agent.loop.nodes.budget import budget_stop, stalled
from agent.loop.nodes.checkout import reset_to_head
from agent.loop.nodes.env import RunEnv
from agent.loop.state import PortState, StageResult, signatures
from tools.records import Failure


def build(state: PortState, env: RunEnv) -> dict:
    """Run the profile's full ROCm build (keep-going) on the work branch's head."""
    with env.clock.span("git"):
        reset_to_head(state)
    counters = dict(state.counters)
    counters["builds"] += 1
    cmd = env.profile.build.rocm.replace("{arch}", env.arch)
    env.observer.emit("build_started", number=counters["builds"], cmd=cmd)
    # Through the run's compile cache: a unit a check already compiled, or that did not change, is reused
    # (incremental). The naive baseline keeps the framework's own build as it is: a full rebuild each time.
    prefix = env.compilers().build_prefix() if env.job.strategy != "naive" else ""
    result, log = env.run(f"build-{counters['builds']}", prefix + cmd, timeout=env.profile.build.timeout_s)
    stages = dict(state.stages)
    stages["build"] = StageResult(
        "passed" if result.ok else "failed",
        f"build #{counters['builds']}, exit {result.returncode}"
        + (" (timed out)" if result.timed_out else ""),
        log=str(log),
    )
    env.observer.emit(
        "build_done",
        number=counters["builds"],
        ok=result.ok,
        log=str(log),
        duration_s=result.duration_s,
        failures="?" if not result.ok else 0,
        counters=counters,
    )
    return {"counters": counters, "stages": stages, "last_log": str(log)}


def diagnose_log(text: str, root: str) -> list[Failure]:
    """Failures in a build or server log, with repo-relative paths (engineer D's parsers)."""
    from tools.diagnose import diagnose_text

    return diagnose_text(text, repo_root=root)


def diagnose(state: PortState, env: RunEnv) -> dict:
    """Read the latest build log; a failed build with no recognisable failure still yields one."""
    if state.stage("build").status == "passed":
        failures: list[Failure] = []
    else:
        text = Path(state.last_log).read_text(errors="replace")
        failures = diagnose_log(text, state.repo_dir)
        if not failures:
            failures = [
                Failure(
                    kind="unknown",
                    message="the build failed without a recognisable error",
                    excerpt=text[-2000:],
                    signature="unknown:build",
                    source="build",
                )
            ]
    history = [*state.history, signatures(failures)]
    env.observer.emit(
        "diagnosed",
        stage="build",
        count=len(failures),
        kinds=sorted({f.kind for f in failures}),
        signatures=history[-1],
    )
    update = {
        "failures": failures,
        "failure_stage": "build",
        "history": history,
        "fixed": _fixed(state, failures),
    }
    reason = stalled(history) if failures else ""
    if failures and not reason:
        reason = budget_stop(state, env, "propose")
    if reason:
        update["stop_reason"] = reason
    return update


def _fixed(state: PortState, now_open: list[Failure]) -> list[str]:
    """Signatures a kept patch targeted that this diagnosis no longer shows."""
    still = set(signatures(now_open))
    targeted = [o.proposal.failure_signature for o in state.outcomes if o.kept]
    return sorted({s for s in targeted if s not in still} | set(state.fixed))
