"""first_wave: before the first full build, compile on their own the ROCm units the scan flagged.

A port's first full build mostly exists to show which units fail. The scan already says where CUDA-only
code is, so the units it flags (a flagged source, or the includers of a flagged header, up to a cap) are
compiled alone with hipcc, in parallel, through the run's warm compile service. Their compiler errors
start the first wave, and when the wave fixes them the first full build is also the last one: a build
fewer per port, which on a framework with an hour-long build is that hour.

Patches still come only from what a compiler reported: a flagged unit that compiles costs one unit
compile, which the build then reuses from the cache. Meanwhile the build's other units are compiled
ahead of it on the cores the wave leaves idle (warm-up compiles at the lowest priority, sandboxes/
compile_worker.py): while one unit check runs on one core, the next build's objects are made on the
rest, and a unit a later patch changes is simply compiled again by the build. A unit the scan missed
fails in the full build and is fixed in the next wave, as before. The naive baseline, and a profile
without a unit template, build first.
"""

from __future__ import annotations

from pathlib import Path

from agent.loop.nodes.env import RunEnv
from agent.loop.nodes.units import UNIT_TIMEOUT_S, compiled_rows, rocm_units, unit_command
from agent.loop.state import PortState
from agent.loop.waves import unit_failures
from agent.patch.units import HEADER_EXTS, SOURCE_EXTS, touched_units

MAX_UNITS = 16
"""At most this many units before the build: past that, a full build (parallel, keep-going) is the cheaper
way to see them all."""


def flagged_units(repo: Path, state: PortState, env: RunEnv) -> list[str]:
    """The ROCm build's units the scan flags: sources with a finding first, then includers of flagged
    headers, in the build's order, at most MAX_UNITS."""
    files = sorted({f.file for f in state.scan if f.file and f.file.endswith(SOURCE_EXTS + HEADER_EXTS)})
    if not files:
        return []
    units, _ = rocm_units(repo, env.profile)
    direct = [u for u in units if u in files]
    headers = [f for f in files if f.endswith(HEADER_EXTS)]
    includers = set(touched_units(repo, headers, limit=len(units) + len(headers))) if headers else set()
    return (direct + [u for u in units if u in includers and u not in direct])[:MAX_UNITS]


def warm_up(env: RunEnv, repo: Path, flagged: list[str]) -> None:
    """Ask the compile service for the build's other units at idle priority (no one waits for them)."""
    service = env.compilers().hip
    if service is None or not service.alive():
        return
    rest = [u for u in rocm_units(repo, env.profile)[0] if u not in flagged]
    for rel in rest:
        service.submit(
            unit_command(env.profile, env.arch, rel, "-warm"), timeout=UNIT_TIMEOUT_S, mode="warmup", unit=rel
        )
    if rest:
        env.observer.emit("note", message=f"compiling the build's other {len(rest)} unit(s) on idle cores")


def before_first_build(state: PortState) -> bool:
    """True while the first wave runs on unit compiles alone: compile failures, and no full build yet."""
    return state.failure_stage == "build" and state.stage("build").status == "not reached"


def first_wave(state: PortState, env: RunEnv) -> dict:
    """Compile the flagged units; their diagnosed errors are the first wave's failures (none: build)."""
    if env.job.strategy == "naive" or env.profile.unit is None:
        return {}
    repo = Path(state.repo_dir)
    units = flagged_units(repo, state, env)
    if not units:
        return {}
    env.observer.emit(
        "note",
        message=f"the scan flags {len(units)} unit(s): compiling them alone before the first full build",
    )
    warm_up(env, repo, units)
    env.compilers().prepare_cuda()  # the patches' CUDA checks come next: nvcc's service starts meanwhile
    counters = dict(state.counters)
    failures = [
        f
        for row, result in compiled_rows(env, state.repo_dir, units, counters)
        if not result.ok
        for f in unit_failures(result.output, state.repo_dir, row["unit"])
    ]
    env.observer.emit(
        "diagnosed",
        stage="unit compile",
        count=len(failures),
        kinds=sorted({f.kind for f in failures}),
        signatures=[f.signature for f in failures],
    )
    # A unit whose errors nothing recognises is left to the full build, which reports it with the rest.
    return {"counters": counters, "failures": failures, "failure_stage": "build" if failures else ""}
