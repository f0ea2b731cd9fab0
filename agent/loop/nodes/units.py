"""units (`--until unit`): compile every translation unit the profile's ROCm build compiles, each on its
own with the profile's hipcc unit template, and record which compile and the first error of each that
does not. Minutes instead of a full build's hour, and no link, install or Python build tools needed.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator
from pathlib import Path

from agent.loop.nodes.build import diagnose_log
from agent.loop.nodes.env import RunEnv
from agent.loop.state import PortState, StageResult
from agent.patch.units import SOURCE_EXTS, source_files
from agent.profiles import Profile
from sandboxes.base import CommandResult

UNIT_TIMEOUT_S = 900


def rocm_units(repo: Path, profile: Profile) -> tuple[list[str], str]:
    """The ROCm build's translation units (repo-relative) and where that list came from: the build's own
    source list when the profile names it (setup_rocm.py, CMakeLists.txt), else the unit globs."""
    from tools.scan.rocm_build import read_build_list

    if profile.rocm_sources is not None:
        listed = read_build_list(repo, profile.rocm_sources)
        if listed is not None:
            return sorted(u for u in listed.units if u.endswith(SOURCE_EXTS)), listed.described
    patterns = list(profile.unit.sources) if profile.unit else []
    units = [
        rel
        for rel in source_files(repo)
        if rel.endswith(SOURCE_EXTS) and any(fnmatch.fnmatch(rel, p) for p in patterns)
    ]
    return units, f"the profile's unit sources {', '.join(patterns)}"


def unit_command(profile: Profile, arch: str, rel: str, tag: str = "") -> str:
    """The profile's hipcc command for one unit, run from the repo root (`tag`: in the object's name, so
    a warm-up and a unit check of one unit never write the same file)."""
    if profile.unit is None:
        raise ValueError(f"profile {profile.name} has no unit template: add `unit:` to compile units alone")
    # an object file nobody reads, written where the compile runs (host or container), never opened by us
    out = f"/tmp/rocport-unit{tag}-{abs(hash(rel)) % 10**8}.o"  # noqa: S108
    return profile.unit.hip.format(file=rel, arch=arch, out=out, dir=str(Path(rel).parent), root=".")


def first_error(output: str, repo: str) -> str:
    """`file:line: message` of the first failure in a unit's log, else its first error-looking line."""
    found = diagnose_log(output, repo)
    if found:
        f = found[0]
        where = f"{f.file}:{f.line}: " if f.file and f.line else f"{f.file}: " if f.file else ""
        return f"{where}{f.message}"
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    return next((ln for ln in lines if "error" in ln.lower()), lines[-1] if lines else "no output")


def compile_each(env: RunEnv, units: list[str]) -> Iterator[tuple[str, CommandResult, Path]]:
    """Each unit's compile and its log, in order. Through the run's warm compile service all units are
    asked for at once (one compile per core, no exec per unit) in depend mode: a first-seen unit compiles
    without a preprocessor pass and records what it read, so a later build reuses it; else one sandbox
    command each."""
    cmds = [unit_command(env.profile, env.arch, rel) for rel in units]
    service = env.compilers().hip
    if service is None or not service.alive():
        for rel, cmd in zip(units, cmds, strict=True):
            yield rel, *env.run(f"unit-{rel}", cmd, timeout=UNIT_TIMEOUT_S)
        return
    ids = [service.submit(cmd, timeout=UNIT_TIMEOUT_S, mode="depend") for cmd in cmds]
    for rel, rid, cmd in zip(units, ids, cmds, strict=True):
        result = service.wait(rid, cmd, UNIT_TIMEOUT_S, quiet=True)
        yield rel, result, env.rundir.log_command(f"unit-{rel}", result)


def compiled_rows(
    env: RunEnv, repo_dir: str, units: list[str], counters: dict
) -> Iterator[tuple[dict, CommandResult]]:
    """Each unit compiled (compile_each), counted in `counters` and announced as a `unit_compiled` event;
    its row (unit, ok, first error, seconds, log) and its result."""
    for i, (rel, result, log) in enumerate(compile_each(env, units), 1):
        row = {
            "unit": rel,
            "ok": result.ok,
            "error": "" if result.ok else first_error(result.output, repo_dir),
            "seconds": round(result.duration_s, 1),
            "log": str(log),
        }
        counters["unit_compiles"] = counters.get("unit_compiles", 0) + 1
        env.observer.emit("unit_compiled", index=i, total=len(units), counters=counters, **row)
        yield row, result


def compile_units(state: PortState, env: RunEnv) -> dict:
    """Compile each ROCm unit once with hipcc for the target; the stage passes when every unit does."""
    stages, counters = dict(state.stages), dict(state.counters)
    if env.profile.unit is None:
        stages["unit"] = StageResult("not run", f"profile {env.profile.name} has no unit template")
        return {"stages": stages}
    units, source = rocm_units(Path(state.repo_dir), env.profile)
    rows = [row for row, _ in compiled_rows(env, state.repo_dir, units, counters)]
    failing = [r for r in rows if not r["ok"]]
    detail = f"{len(rows) - len(failing)} of {len(rows)} compile with hipcc for {env.arch} ({source})"
    stages["unit"] = StageResult(
        "passed" if rows and not failing else "failed",
        detail if rows else f"no translation units found in {source}",
        facts={"units": rows, "source": source},
    )
    env.observer.emit("stage", stage="unit", status=stages["unit"].status, detail=stages["unit"].detail)
    return {"stages": stages, "counters": counters}
