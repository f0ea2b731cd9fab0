"""The LLM's repo tools against a hostile repo and a hostile model: no .git, no symlinks, no secrets
through /proc, no crash on bad arguments, no megabyte "fixes". Real git repos, ScriptedModel only."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from agent.proposers.base import Decline, Workspace
from agent.proposers.llm.model import ScriptedModel
from agent.proposers.llm.proposer import LLMProposer
from agent.proposers.llm.tools import MAX_EDIT_BYTES
from tools.patching import PatchError, apply_diff
from tools.records import Failure

KERNEL = "#include <cuda_runtime.h>\n__global__ void k(float* x) { x[0] = 1.f; }\n"
FAILURE = Failure(
    kind="cuda_header",
    message="cuda_runtime.h not found",
    file="csrc/k.cu",
    line=1,
    symbol="cuda_runtime.h",
    signature="cuda_header:csrc/k.cu:cuda_runtime.h",
)
CANARY = "canary-7f3a9e21-do-not-leak"


def _answers(model: ScriptedModel) -> list[str]:
    """Every tool result the model was shown, in order."""
    return [m["content"] for m in model.seen[-1] if m["role"] == "tool"]


def _commit(repo, *paths):
    subprocess.run(["git", "add", "-A", *paths], cwd=repo, check=True)
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qm", "more"], cwd=repo, check=True
    )


SCRIPT = """
import json, sys
from pathlib import Path
from agent.proposers.llm.model import ScriptedModel
from agent.proposers.llm.proposer import LLMProposer
from agent.proposers.base import Decline, Workspace
from tests.security.test_llm_tools import FAILURE
calls = json.loads(sys.argv[2])
model = ScriptedModel([[tuple(c)] for c in calls] + [[("decline", {"reason": "done"})]])
try:
    LLMProposer(model).propose(FAILURE, Workspace(Path(sys.argv[1])))
except Decline:
    pass
print(json.dumps(model.seen))
"""


def test_a_committed_link_to_proc_environ_never_reaches_the_model(git_repo):
    repo = git_repo({"csrc/k.cu": KERNEL})
    os.symlink("/proc/self/environ", repo / "env_link")
    os.symlink("/proc/self", repo / "proc_link")
    _commit(repo)
    calls = [
        ("grep", {"pattern": "TOKEN"}),
        ("grep", {"pattern": "canary"}),
        ("read_file", {"path": "env_link"}),
        ("read_file", {"path": "proc_link/environ"}),
        ("list_dir", {"path": "proc_link"}),
        ("grep", {"pattern": ".", "glob": "env_link"}),
    ]
    env = {**os.environ, "GITHUB_TOKEN": CANARY, "HF_TOKEN": CANARY, "PYTHONPATH": os.getcwd()}
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(repo), json.dumps(calls)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    seen = json.loads(out.stdout)
    assert CANARY not in out.stdout
    tools = [m["content"] for m in seen[-1] if m["role"] == "tool"]
    assert tools[0] == "no matches" and tools[1] == "no matches"
    assert all("symlink" in t for t in tools[2:5]), tools
    assert tools[5] == "no matches"


def test_nothing_under_dot_git_is_read_listed_or_edited(git_repo):
    repo = git_repo({"csrc/k.cu": KERNEL})
    before = (repo / ".git/config").read_text()
    model = ScriptedModel(
        [
            [("read_file", {"path": ".git/config"})],
            [("list_dir", {"path": ".git"})],
            [("list_dir", {"path": "csrc/../.git"})],
            [("read_file", {"path": "csrc/.GIT/x"})],
            [
                (
                    "propose_edit",
                    {
                        "path": ".git/config",
                        "search": "[core]",
                        "replace": "[core]\n\tfsmonitor = touch /tmp/pwned",
                    },
                )
            ],
            [("propose_edit", {"path": ".git/hooks/post-commit", "search": "", "replace": "#!/bin/sh\n"})],
            [("grep", {"pattern": "repositoryformatversion"})],
            [("list_dir", {"path": "."})],
            [("decline", {"reason": "done"})],
        ]
    )
    with pytest.raises(Decline, match="done"):
        LLMProposer(model).propose(FAILURE, Workspace(repo))
    answers = _answers(model)
    assert all(a.startswith("error:") for a in answers[:6]), answers
    assert ".git" in answers[0] and "not a repo-relative path" in answers[2]
    assert answers[6] == "no matches" and ".git" not in answers[7].split()
    assert (repo / ".git/config").read_text() == before and not (repo / ".git/hooks/post-commit").exists()


def test_bad_arguments_are_error_results_and_the_run_goes_on(git_repo):
    repo = git_repo({"csrc/k.cu": KERNEL})
    os.symlink("loop", repo / "loop")
    os.mkfifo(repo / "csrc/pipe.cu")
    model = ScriptedModel(
        [
            [("read_file", {"path": "csrc/k.cu\x00/etc/passwd"})],
            [("read_file", {"path": "csrc/k.cu", "start_line": "abc"})],
            [("read_file", {"path": "csrc/k.cu", "end_line": [1]})],
            [("read_file", {"path": "loop"})],
            [("read_file", {"path": "loop/x"})],
            [("read_file", {"path": 7})],
            [("read_file", {"_raw": "{not json"})],
            [("read_file", {"path": "csrc/k.cu", "bogus": 1})],
            [("grep", {"pattern": "(" * 600})],
            [("grep", {"pattern": "x", "glob": ["*.cu"]})],
            [("propose_edit", {"path": "csrc/k.cu", "search": "x\x00", "replace": "y"})],
            [("read_file", {"path": "csrc/pipe.cu"})],
            [("grep", {"pattern": "cuda_runtime"})],  # the FIFO is skipped, never opened for a blocking read
            [("read_file", {"path": "csrc/k.cu", "start_line": "1", "end_line": 1})],
            [("decline", {"reason": "done"})],
        ]
    )
    with pytest.raises(Decline, match="done"):
        LLMProposer(model, max_turns=20).propose(FAILURE, Workspace(repo))
    answers = _answers(model)
    assert all(a.startswith("error:") for a in answers[:12]), answers
    assert "NUL" in answers[0] and "integer" in answers[1] and "integer" in answers[2]
    assert "JSON object" in answers[6] and "bogus" in answers[7]
    assert answers[12] == "csrc/k.cu:1: #include <cuda_runtime.h>"
    assert answers[13] == "    1 | #include <cuda_runtime.h>"


def test_a_50_mb_edit_is_refused_and_never_becomes_a_proposal(git_repo):
    repo = git_repo({"csrc/k.cu": KERNEL})
    huge = "// pad\n" * (50 * 1024 * 1024 // 7)
    model = ScriptedModel(
        [
            [("propose_edit", {"path": "csrc/k.cu", "search": "x[0] = 1.f;", "replace": huge})],
            [("propose_edit", {"path": "csrc/big.h", "search": "", "replace": huge})],
            [("finish", {"rationale": "padding"})],
        ]
    )
    proposer = LLMProposer(model)
    with pytest.raises(Decline, match=r"^finished without any edit$"):
        proposer.propose(FAILURE, Workspace(repo))
    assert all("bytes" in a and a.startswith("error:") for a in _answers(model)), _answers(model)
    assert (repo / "csrc/k.cu").read_text() == KERNEL and not (repo / "csrc/big.h").exists()


def test_edits_that_add_up_past_the_diff_cap_are_not_proposed(git_repo):
    repo = git_repo({"csrc/k.cu": KERNEL})
    part = "// pad\n" * (MAX_EDIT_BYTES // 7 // 2 + 100)
    model = ScriptedModel(
        [[("propose_edit", {"path": f"csrc/pad{i}.h", "search": "", "replace": part})] for i in range(3)]
        + [[("finish", {"rationale": "padding"})]]
    )
    proposer = LLMProposer(model)
    with pytest.raises(Decline, match="cap"):
        proposer.propose(FAILURE, Workspace(repo))
    assert not list((repo / "csrc").glob("pad*.h"))  # the working tree is put back


def test_a_huge_diff_from_any_proposer_is_refused_before_git(git_repo):
    repo = git_repo({"csrc/k.cu": KERNEL})
    body = "".join(f"+// line {i}\n" for i in range(120_000))
    diff = (
        f"diff --git a/csrc/new.h b/csrc/new.h\nnew file mode 100644\n--- /dev/null\n+++ b/csrc/new.h\n"
        f"@@ -0,0 +1,120000 @@\n{body}"
    )
    with pytest.raises(PatchError, match="cap"):
        apply_diff(repo, diff)
    assert not (repo / "csrc/new.h").exists()
