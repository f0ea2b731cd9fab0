"""Shared helpers for rule tests: run a fixer, validate with real compilers."""

from __future__ import annotations

from pathlib import Path

from agent.patch.validate import Toolchains, Validator
from agent.proposers.rules import Workspace, propose_for
from sandboxes.local import LocalSandbox
from tools.records import Failure


def failure(kind: str, file: str, symbol: str, message: str = "") -> Failure:
    return Failure(
        kind=kind,
        message=message or f"error about {symbol}",
        file=file,
        symbol=symbol,
        signature=f"{kind}:{file}:{symbol}",
        source="hipcc",
        facts={"unit": file},
    )


def propose(root: Path, fail: Failure, arch: str = "gfx942"):
    """The one proposal the playbook makes (asserts there is exactly one)."""
    result = propose_for(fail, Workspace(root=root, target_arch=arch))
    assert len(result.proposals) == 1, result.declines
    return result.proposals[0]


def declines(root: Path, fail: Failure) -> list[str]:
    result = propose_for(fail, Workspace(root=root))
    assert not result.proposals
    return result.declines


def host_toolchains(root: Path, with_nvcc: bool = True) -> Toolchains:
    """Host hipcc (gfx90a) plus host nvcc."""
    return Toolchains(hip=LocalSandbox(root), arch="gfx90a", cuda=LocalSandbox(root) if with_nvcc else None)


def image_toolchains(root: Path, image: str, arch: str) -> Toolchains:
    """hipcc in the ROCm image for `arch`, host nvcc."""
    from sandboxes.docker import DockerSandbox

    return Toolchains(hip=DockerSandbox(image, str(root)), arch=arch, cuda=LocalSandbox(root))


def validate(root: Path, tools: Toolchains, proposal, fail: Failure):
    return Validator(root, tools).validate(proposal, fail)


def prove_inline_ptx(git_repo, rocm_image: str, kernel: str, symbol: str, constraint: str):
    """A header kernel with an asm statement hipcc rejects, its unit including it: the rules' patch, kept
    with every check passing (hipcc gfx942 in the image, nvcc, CUDA identity); returns (root, proposal)."""
    root = git_repo({"csrc/kernel.cuh": kernel, "csrc/unit.cu": '#include "kernel.cuh"\n'})
    fail = failure(
        "inline_ptx", "csrc/kernel.cuh", symbol, f"invalid output constraint '{constraint}' in asm"
    )
    fail.facts["unit"] = "csrc/unit.cu"
    prop = propose(root, fail)
    outcome = validate(root, image_toolchains(root, rocm_image, "gfx942"), prop, fail)
    assert outcome.kept, outcome.reason
    assert all(c.ok for c in outcome.checks), [c.detail for c in outcome.checks]
    return root, prop


def device_code(root: Path, rocm_image: str, flags: str) -> str:
    """hipcc's gfx942 device code for csrc/unit.cu (`flags`: -S for assembly, -S -emit-llvm for IR)."""
    from sandboxes.docker import DockerSandbox

    with DockerSandbox(rocm_image, str(root)) as box:
        out = box.run(
            "hipcc -x hip -DUSE_ROCM -include hip/hip_runtime.h --offload-arch=gfx942 --cuda-device-only -O2 "
            f"{flags} -I. -o - csrc/unit.cu",
            cwd=str(root),
        )
    assert out.ok, out.stderr[-2000:]
    return out.stdout
