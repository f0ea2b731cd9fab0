"""The LLM proposer end to end with a ScriptedModel: tool calls edit a real repo, the result is a
`git apply`-able diff, the working tree is left clean, and the caps and refusals hold."""

import subprocess

import pytest

from agent.proposers.base import Decline, Workspace
from agent.proposers.llm.model import ScriptedModel, Usage
from agent.proposers.llm.proposer import LLMProposer
from tools.records import Failure

KERNEL = """#include <hip/hip_runtime.h>
__device__ int pack(int a, int b) {
  int r;
  asm("prmt.b32 %0, %1, %2, 0x5410;" : "=r"(r) : "r"(a), "r"(b));
  return r;
}
"""
FAILURE = Failure(
    kind="inline_ptx",
    message="invalid instruction",
    file="csrc/pack.cu",
    line=4,
    symbol="prmt.b32",
    signature="inline_ptx:csrc/pack.cu:prmt.b32",
)


def _status(repo):
    return subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True).stdout


def test_scripted_tool_calls_become_an_applicable_diff(git_repo):
    repo = git_repo(
        {"csrc/pack.cu": KERNEL, "csrc/other.cu": "#ifdef USE_ROCM\n#include <hip/hip_runtime.h>\n#endif\n"}
    )
    checks = []

    def compile_check(root, rel):
        checks.append((rel, (root / rel).read_text()))
        return True, ""

    model = ScriptedModel(
        [
            [("read_file", {"path": "csrc/pack.cu", "start_line": 1, "end_line": 6})],
            [
                (
                    "propose_edit",
                    {
                        "path": "csrc/pack.cu",
                        "search": 'asm("prmt.b32 %0, %1, %2, 0x5410;" : "=r"(r) : "r"(a) : "r"(b));',
                        "replace": "x",
                    },
                )
            ],  # a miss: the model gets the closest lines back
            [
                (
                    "propose_edit",
                    {
                        "path": "csrc/pack.cu",
                        "search": '  asm("prmt.b32 %0, %1, %2, 0x5410;" : "=r"(r) : "r"(a), "r"(b));\n',
                        "replace": "#ifdef USE_ROCM\n  r = (a & 0xffff) | (b << 16);\n#else\n"
                        '  asm("prmt.b32 %0, %1, %2, 0x5410;" : "=r"(r) : "r"(a), "r"(b));\n#endif\n',
                    },
                )
            ],
            [("compile_check", {"path": "csrc/pack.cu"})],
            [("finish", {"rationale": "prmt selecting the low halves is a shift and a mask on ROCm"})],
        ]
    )
    usage = Usage()
    proposal = LLMProposer(model, usage=usage, compile_check=compile_check).propose(FAILURE, Workspace(repo))
    assert proposal is not None and proposal.files == ["csrc/pack.cu"] and proposal.proposer == "llm:scripted"
    assert "+#ifdef USE_ROCM" in proposal.diff
    feedback = model.seen[2][-1]["content"]
    assert "did you mean" in feedback and "prmt.b32" in feedback
    assert "#ifdef USE_ROCM" in checks[0][1]  # the compile check saw the edit
    assert _status(repo) == ""  # working tree restored; the diff is the proposal
    applied = subprocess.run(["git", "apply", "--check", "-"], cwd=repo, input=proposal.diff, text=True)
    assert applied.returncode == 0
    assert usage.calls == 5 and usage.total_tokens > 0
    assert "How this repo already handles ROCm" in model.seen[0][1]["content"]


def test_decline_and_turn_cap_raise_decline_with_reason(git_repo):
    repo = git_repo({"csrc/pack.cu": KERNEL})
    declining = LLMProposer(
        ScriptedModel([[("decline", {"reason": "tensor-core PTX needs an MFMA rewrite"})]])
    )
    with pytest.raises(Decline, match="MFMA"):
        declining.propose(FAILURE, Workspace(repo))
    looping = LLMProposer(ScriptedModel([[("list_dir", {"path": "."})]] * 3), max_turns=3)
    with pytest.raises(Decline, match="3 turns"):
        looping.propose(FAILURE, Workspace(repo))


def test_paths_outside_the_repo_are_refused(git_repo, tmp_path):
    repo = git_repo({"csrc/pack.cu": KERNEL})
    (tmp_path / "outside.txt").write_text("secret")
    (repo / "link").symlink_to(tmp_path)
    model = ScriptedModel(
        [
            [("read_file", {"path": "../outside.txt"})],
            [("propose_edit", {"path": "link/outside.txt", "search": "secret", "replace": "pwned"})],
            [("decline", {"reason": "stop"})],
        ]
    )
    with pytest.raises(Decline, match="stop"):
        LLMProposer(model).propose(FAILURE, Workspace(repo))
    assert "not a repo-relative path" in model.seen[1][-1]["content"]
    assert "do not follow symlinks" in model.seen[2][-1]["content"]
    assert (tmp_path / "outside.txt").read_text() == "secret"
