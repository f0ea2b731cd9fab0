"""`rocport fix` in waves: masked errors are found by recompiling, and a failing unit is never called proven."""

from __future__ import annotations

import subprocess

from typer.testing import CliRunner

from agent.cli import app
from agent.patch.validate import Toolchains, Validator
from sandboxes.local import LocalSandbox
from tests.agent.rules.helpers import failure
from tools.records import Proposal

LAYERED = """#include <cuda_runtime.h>

__global__ void warp_sum(float* x) {
  float v = x[threadIdx.x];
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffff, v, offset);
  if (threadIdx.x % 32 == 0) x[threadIdx.x / 32] = v;
}
"""
STUCK = """#include <cuda_runtime.h>

__global__ void k(float* x) { x[0] = cudaNoSuchThing; }
"""
FATAL = "{unit}:1:10: fatal error: 'cuda_runtime.h' file not found\n1 error generated when compiling for gfx90a.\n"


def _git(root, *args) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout


def test_masked_errors_are_fixed_in_the_next_wave_and_the_table_tells_the_truth(git_repo, hipcc, nvcc):
    root = git_repo({"csrc/layered.cu": LAYERED, "csrc/stuck.cu": STUCK})
    log = root.parent / "build.log"
    log.write_text(FATAL.format(unit="csrc/layered.cu") + FATAL.format(unit="csrc/stuck.cu"))
    result = CliRunner().invoke(app, ["fix", str(root), "--log", str(log), "--image", "local"])
    assert result.exit_code == 0, result.output
    subjects = _git(root, "log", "--format=%s", "main..HEAD").splitlines()
    assert "Route warp intrinsics through the compat header in csrc/layered.cu" in subjects  # wave 2
    assert "1/2 unit(s) compile for ROCm; 1 still fail" in result.output
    # The stuck unit's patch proves nothing: it is withdrawn from the branch, kept on <branch>-partial.
    assert "csrc/stuck.cu" not in _git(root, "diff", "--name-only", "main..HEAD")
    assert "1 patch(es) withdrawn" in result.output and "withdrawn" in result.output
    partial = _git(root, "branch", "--show-current").strip() + "-partial"
    stuck = _git(root, "log", "-1", "--format=%B", partial, "--", "csrc/stuck.cu")
    assert "[still fails] hipcc gfx90a csrc/stuck.cu" in stuck and "cudaNoSuchThing" in stuck
    assert "[ok] hipcc gfx90a csrc/stuck.cu" not in stuck  # a failing unit is never called proven


def test_identity_proof_ignores_line_numbers_that_a_guard_shifts(git_repo, hipcc, nvcc):
    """A guard above a macro that expands __LINE__ changes no CUDA token but the line numbers."""
    before = (
        "#define HERE() where(__LINE__, __COUNTER__)\nint where(int, int);\n#include <cuda_runtime.h>\n"
        "int here = HERE();\n"
    )
    after = before.replace(
        "#include <cuda_runtime.h>\n",
        "#ifdef USE_ROCM\n#include <hip/hip_runtime.h>\n#else\n#include <cuda_runtime.h>\n#endif\n",
    )
    root = git_repo({"k.cu": before})
    from agent.proposers.rules import file_diff

    prop = Proposal(
        failure_signature="s",
        proposer="test",
        diff=file_diff("k.cu", before, after),
        rationale="",
        files=["k.cu"],
    )
    tools = Toolchains(hip=LocalSandbox(root), arch="gfx90a", cuda=LocalSandbox(root))
    outcome = Validator(root, tools).validate(prop, failure("cuda_header", "k.cu", "cuda_runtime.h"))
    identity = [c for c in outcome.checks if c.name.startswith(("cuda -E identity", "cuda identity"))]
    assert identity and identity[0].ok, identity
    assert outcome.kept, outcome.reason


TWO_ASM = """#include <hip/hip_runtime.h>
#include <cstdint>

__device__ uint32_t lane() {
  uint32_t id;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(id));
  return id;
}

__device__ uint32_t bits(float x) {
  uint32_t u;
  asm("mov.b32 %0, %1;" : "=r"(u) : "f"(x));
  return u;
}

__global__ void k(const float* x, uint32_t* y) { y[lane()] = bits(x[lane()]); }
"""


def test_an_error_an_earlier_patch_fixed_is_listed_with_that_commit_not_declined(git_repo, hipcc, nvcc):
    """The PTX rule rewrites every asm statement of a file at once: the file's later asm errors are
    fixed by that commit, and the table says so rather than 'declined: no known mapping'."""
    from agent.patch.fix import fix_failures
    from agent.proposers.base import Workspace

    root = git_repo({"k.cu": TWO_ASM})
    fails = [failure("inline_ptx", "k.cu", "mov.u32"), failure("inline_ptx", "k.cu", "mov.b32")]
    tools = Toolchains(hip=LocalSandbox(root), arch="gfx90a", cuda=LocalSandbox(root))
    records = fix_failures(Workspace(root=root, target_arch="gfx90a"), fails, Validator(root, tools))
    assert [r.status for r in records] == ["kept", "fixed_earlier"], [r.reasons for r in records]
    [kept] = records[0].outcomes
    assert kept.commit and records[1].outcomes == [kept] and not records[1].reasons
    assert _git(root, "rev-list", "--count", "HEAD").strip() == "2"  # the repo's commit and one fix for both
