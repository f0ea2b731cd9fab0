"""`rocport fix` and the port loop take one validate-and-commit path (agent.patch.settle): the same fault
gives the same decision and the same commit, evidence included."""

from __future__ import annotations

import re
from pathlib import Path

from agent.loop.nodes.apply_check import apply_check
from agent.loop.nodes.propose import propose
from agent.loop.state import PortState
from agent.patch.fix import fix_failures
from agent.patch.validate import Toolchains, Validator, host_cuda_sandbox
from agent.profiles import load_profile
from agent.proposers.base import Workspace
from sandboxes.local import LocalSandbox
from tests.agent.portfixture import FILES, header_failure
from tests.agent.test_graph import checked_out, make_env
from tools import git as gitops
from tools.records import Failure

# the header masks the undeclared __shfl_xor_sync: the kept patch leaves its unit failing on something else
HEADER = header_failure("csrc/warp_reduce.cu")


def _message(repo: Path) -> str:
    """HEAD's commit message with the per-clone object-file name made neutral."""
    text = gitops.git(repo, "log", "-1", "--format=%B")
    return re.sub(r"/tmp/rocport-unit-\d+\.o", "/tmp/rocport-unit-N.o", text)


def test_a_fix_and_a_port_of_the_same_fault_make_the_same_commit(tmp_path, git_repo, hipcc, nvcc):
    env = make_env(tmp_path, git_repo(FILES, "port-origin"))
    state = checked_out(env)
    state = PortState(**{**state.__dict__, "failures": [HEADER], "failure_stage": "build"})
    state = PortState(**{**state.__dict__, **propose(state, env)})
    update = apply_check(state, env)
    [port] = update["outcomes"]

    repo = git_repo(FILES, "fix-clone")
    profile = load_profile(env.job.framework.profile)
    tools = Toolchains.from_profile(LocalSandbox(repo), host_cuda_sandbox(repo), "gfx90a", profile)
    tools.extra_env = {"HIP_PLATFORM": "amd"}
    ws = Workspace(root=repo, profile=profile, target_arch="gfx90a")
    try:
        [record] = fix_failures(ws, [Failure.from_dict(HEADER)], Validator(repo, tools))
    finally:
        tools.close()
    [fix] = record.outcomes

    assert port.kept and fix.kept and record.status == "kept"
    assert port.reason == fix.reason == "checks passed"
    assert port.proposal.diff == fix.proposal.diff
    message = _message(repo)
    assert message == _message(Path(state.repo_dir))
    assert message.startswith("Guard CUDA headers for ROCm in csrc/warp_reduce.cu")
    # the unit still fails (on the unmasked intrinsic): both say so in the evidence rather than [ok]
    assert "[still fails] hipcc gfx90a csrc/warp_reduce.cu" in message
    assert "[ok] nvcc csrc/warp_reduce.cu: not recompiled: its CUDA input is unchanged" in message
    # the loop goes on with the failure the header masked, without a rebuild
    assert [f.symbol for f in update["failures"]] == ["__shfl_xor_sync"]
