"""Where and how a patch's translation units are compiled: the toolchains (hipcc in the ROCm sandbox,
nvcc on the host), the profile's unit templates, and the run's warm compile services when it has them
(sandboxes/compile_service.py): a patch's units then compile on both toolchains at once, cached.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.patch.units import HEADER_EXTS, touched_units
from sandboxes.base import CommandResult, Sandbox

HIP_UNIT = "hipcc -x hip -DUSE_ROCM --offload-arch={arch} -I{dir} -I{root} -c {file} -o {out}"
CUDA_UNIT = "nvcc -x cu -arch=sm_90 -I{dir} -I{root} -c {file} -o {out}"
CUDA_PREPROCESS = "nvcc -x cu -arch=sm_90 -E -I{dir} -I{root} {file}"


@dataclass
class Toolchains:
    """Where and how units are compiled. `hip` runs hipcc (the ROCm image, or the host); `cuda` runs nvcc."""

    hip: Sandbox
    arch: str = "gfx942"
    cuda: Sandbox | None = None
    hip_unit: str = HIP_UNIT
    cuda_unit: str = CUDA_UNIT
    cuda_preprocess: str = CUDA_PREPROCESS
    sources: list[str] | None = None
    timeout: float = 600
    extra_env: dict[str, str] = field(default_factory=dict)
    python: str = "python3"
    """The interpreter in the `hip` sandbox that imports touched Python modules (the build image's)."""
    hip_service: Any = None
    """The run's warm compile service in the `hip` sandbox (sandboxes.compile_service); None: one run each."""
    cuda_service: Any = None
    """The same for nvcc on the host."""

    def close(self) -> None:
        """Close the sandboxes (containers are removed)."""
        for box in (self.hip, self.cuda):
            if box is not None:
                box.close()

    @classmethod
    def from_profile(
        cls, hip: Sandbox, cuda: Sandbox | None, arch: str, profile=None, compilers: Any = None
    ) -> Toolchains:
        """Templates from the profile's `unit` section when given, else the defaults above; compiles go
        through the run's warm services when `compilers` (agent.loop.compilers.Compilers) is given."""
        services = {}
        if compilers is not None:
            services = {"hip_service": compilers.hip, "cuda_service": compilers.cuda}
            cuda = compilers.cuda_box if compilers.cuda_box is not None else cuda
        unit = getattr(profile, "unit", None)
        if unit is None:
            return cls(hip=hip, cuda=cuda, arch=arch, **services)
        return cls(
            hip=hip,
            cuda=cuda,
            arch=arch,
            hip_unit=unit.hip,
            cuda_unit=unit.cuda or CUDA_UNIT,
            cuda_preprocess=unit.cuda_preprocess or CUDA_PREPROCESS,
            sources=list(unit.sources),
            **services,
        )


def _fmt(template: str, root: Path, rel: str, arch: str, lang: str = "cu") -> str:
    """A unit command with repo-relative paths (commands run in the repo root, host or container).

    A header checked on its own needs an explicit language (`-x cu` / `-x hip`) when the template has none."""
    # an object file nobody reads, written where the compile runs (host or container), never opened by us
    out = f"/tmp/rocport-unit-{abs(hash((str(root), rel))) % 10**8}.o"  # noqa: S108
    parent = str(Path(rel).parent)
    if rel.endswith(HEADER_EXTS) and " -x " not in f" {template} ":
        compiler, _, rest = template.partition(" ")
        template = f"{compiler} -x {lang} {rest}"
    return template.format(file=shlex.quote(rel), arch=arch, out=out, dir=shlex.quote(parent), root=".")


def _live(service: Any) -> bool:
    return service is not None and service.alive()


def _run_all(tools: Toolchains, box: Sandbox, service: Any, cmds: list[str]) -> list[CommandResult]:
    """Commands through the warm service (in parallel, cached), else one sandbox command each."""
    env = tools.extra_env or None
    if _live(service):
        return service.run_many(cmds, env=env, timeout=tools.timeout)
    return [box.run(cmd, env=env, timeout=tools.timeout) for cmd in cmds]


def compile_hip_units(tools: Toolchains, root: Path, units: list[str]) -> list[CommandResult]:
    """Compile translation units (or headers) for the ROCm target with the profile's template."""
    cmds = [_fmt(tools.hip_unit, root, rel, tools.arch, "hip") for rel in units]
    return _run_all(tools, tools.hip, tools.hip_service, cmds)


def index_includers(tools: Toolchains, root: Path, touched: list[str]) -> None:
    """Before a header patch: give the build's clean compiles of the units that only include a touched
    file a preprocessed key, so one the patch leaves alone (only line markers move) is reused, not
    recompiled (compile_cache.index_compile; nothing to do without the warm service)."""
    service = tools.hip_service
    if not any(f.endswith(HEADER_EXTS) for f in touched) or not _live(service):
        return
    includers = [u for u in touched_units(root, touched, tools.sources) if u not in touched]
    cmds = [_fmt(tools.hip_unit, root, rel, tools.arch, "hip") for rel in includers]
    ids = [
        service.submit(cmd, env=tools.extra_env or None, timeout=tools.timeout, mode="index") for cmd in cmds
    ]
    for rid, cmd in zip(ids, cmds, strict=True):
        service.wait(rid, cmd, tools.timeout, quiet=True)


def drop_warmups(tools: Toolchains, units: list[str]) -> None:
    """A patch is about to change what `units` read: their warm-up compiles (the build's units compiled
    ahead of it on idle cores) would make objects of the old tree, so they are dropped or killed."""
    if _live(tools.hip_service):
        tools.hip_service.cancel_warmups(units)


def compile_hip_unit(tools: Toolchains, root: Path, rel: str) -> CommandResult:
    """Compile one translation unit (or header) for the ROCm target with the profile's template."""
    return compile_hip_units(tools, root, [rel])[0]


def compile_both(
    tools: Toolchains,
    root: Path,
    units: list[str],
    edited: list[str] | tuple[str, ...] = (),
    cuda_units: list[str] | Callable[[], list[str]] | None = None,
) -> tuple[list[CommandResult], list[CommandResult]]:
    """Every unit with hipcc and (when present) nvcc; every request to a warm service is sent before any
    answer is read, so both compilers work at once. `edited`: files the patch changed; their ROCm compile
    is asked for in "edited" mode (no preprocessor pass first: the patch changed what hipcc sees, so no
    earlier compile can answer it). Their CUDA compile keeps the preprocessed key: a guarded patch leaves
    CUDA's input unchanged but for line markers, and an earlier clean nvcc compile of the unit answers.
    `cuda_units`: the units nvcc compiles when not all of them (the rest are proven unchanged for CUDA), or
    a function that says which, called once the hipcc requests are sent (it may wait for a CUDA -E)."""
    hip_cmds = [_fmt(tools.hip_unit, root, rel, tools.arch, "hip") for rel in units]
    env, timeout = tools.extra_env or None, tools.timeout
    hip_ids = cuda_ids = None
    if _live(tools.hip_service):
        modes = ["edited" if rel in edited else "" for rel in units]
        hip_ids = [
            tools.hip_service.submit(c, env=env, timeout=timeout, mode=m)
            for c, m in zip(hip_cmds, modes, strict=True)
        ]
    if tools.cuda is None:
        nvcc_units: list[str] = []
    else:
        nvcc_units = units if cuda_units is None else cuda_units() if callable(cuda_units) else cuda_units
    cuda_cmds = [_fmt(tools.cuda_unit, root, rel, tools.arch) for rel in nvcc_units]
    if _live(tools.cuda_service):
        cuda_ids = [tools.cuda_service.submit(c, env=env, timeout=timeout) for c in cuda_cmds]
    if hip_ids is None:
        hip = [tools.hip.run(c, env=env, timeout=timeout) for c in hip_cmds]
    else:
        hip = [tools.hip_service.wait(i, c, timeout) for i, c in zip(hip_ids, hip_cmds, strict=True)]
    if cuda_ids is not None:
        cuda = [tools.cuda_service.wait(i, c, timeout) for i, c in zip(cuda_ids, cuda_cmds, strict=True)]
    else:
        cuda = [tools.cuda.run(c, env=env, timeout=timeout) for c in cuda_cmds] if tools.cuda else []
    return hip, cuda
