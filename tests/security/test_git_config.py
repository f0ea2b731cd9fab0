"""A clone whose .git/config and hooks run commands: rocport's own git calls on the host never run
them (core.fsmonitor, hooks, filter/diff/merge drivers, signing, pager) during a port, `rocport pr`,
`rocport fix` or `--resume`. Real git, real repos, real ports on the fixture."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent.cli import app
from agent.config import load_job
from agent.loop.port import resume_port, start_port
from agent.patch.fix import start_branch
from agent.patch.settle import Verdict, settle
from tests.agent.portfixture import HEADER_FAULTS, make_job
from tools import git as gitops
from tools.patching import apply_diff, revert_diff
from tools.records import CheckResult, Failure, Proposal

ROCPORT = [sys.executable, "-c", "from agent.cli import main; main()"]
HOOKS = (
    "pre-commit",
    "post-commit",
    "commit-msg",
    "prepare-commit-msg",
    "post-checkout",
    "post-rewrite",
    "reference-transaction",
    "pre-auto-gc",
    "post-index-change",
    "pre-push",
)


def arm(repo: Path, mark: Path) -> None:
    """Make the clone run `touch MARK` from every place git takes a command: config keys and hooks.

    Written as files (not through git), the way code running in the clone would do it."""
    touch = f"touch {mark}"
    with (repo / ".git/config").open("a") as cfg:
        cfg.write(
            f'[core]\n\tfsmonitor = "{touch}; false"\n\tpager = "{touch}; cat"\n'
            f'\tsshCommand = "{touch}; ssh"\n'
            f'[filter "evil"]\n\tclean = "{touch}; cat"\n\tsmudge = "{touch}; cat"\n\tprocess = "{touch}"\n'
            f'[diff "evil"]\n\ttextconv = "{touch}; cat"\n\tcommand = "{touch}"\n'
            f'[diff]\n\texternal = "{touch}"\n[merge "evil"]\n\tdriver = "{touch}; false"\n'
            f'[commit]\n\tgpgSign = true\n[gpg]\n\tprogram = "{touch}"\n'
            f'[credential]\n\thelper = "!{touch}"\n'
        )
    info = repo / ".git/info"
    info.mkdir(exist_ok=True)
    (info / "attributes").write_text("* filter=evil diff=evil merge=evil\n")
    hooks = repo / ".git/hooks"
    hooks.mkdir(exist_ok=True)
    for name in HOOKS:
        (hooks / name).write_text(f"#!/bin/sh\n{touch}\n")
        (hooks / name).chmod(0o755)


def test_the_armed_clone_is_live_for_a_plain_git(git_repo, tmp_path):
    """The attack is real: plain git runs the command (so the tests below can fail)."""
    repo = git_repo({"a.txt": "a\n"})
    mark = tmp_path / "mark"
    arm(repo, mark)
    (repo / "a.txt").write_text("b\n")
    subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True, check=False)
    assert mark.exists()


def test_every_tools_git_operation_runs_no_repo_command(git_repo, tmp_path):
    repo = git_repo({"csrc/k.cu": "int k;\n", "README": "x\n"})
    mark = tmp_path / "mark"
    arm(repo, mark)
    diff = (
        "diff --git a/csrc/k.cu b/csrc/k.cu\n--- a/csrc/k.cu\n+++ b/csrc/k.cu\n@@ -1 +1,2 @@\n int k;\n"
        "+int j;\n"
    )
    apply_diff(repo, diff)
    assert gitops.dirty_files(repo, "csrc/k.cu")
    assert "+int j;" in gitops.diff_files(repo, ["csrc/k.cu"])
    revert_diff(repo, diff)
    apply_diff(repo, diff)
    branch = start_branch(repo) if not gitops.dirty_files(repo, untracked=False) else None
    assert branch is None  # dirty: start_branch refuses; commit on main instead
    failure = Failure(kind="cuda_header", message="m", file="csrc/k.cu", signature="s")
    proposal = Proposal("s", "rule:headers", diff, "why", ["csrc/k.cu"])
    outcome = settle(repo, failure, proposal, Verdict(checks=[CheckResult("hipcc", True, "compiles")]))
    assert outcome.kept
    assert gitops.head(repo) == outcome.commit
    assert start_branch(repo).startswith("rocport/fix-")
    gitops.git(repo, "format-patch", "--stdout", "HEAD~1")
    gitops.git(repo, "log", "-p", "-1")
    (repo / "new.txt").write_text("n\n")
    gitops.reset_hard(repo, "HEAD~1")
    assert not (repo / "new.txt").exists()
    assert not mark.exists()


def test_a_config_that_moves_the_work_tree_is_refused(git_repo, tmp_path):
    repo = git_repo({"a.txt": "a\n"})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with (repo / ".git/config").open("a") as cfg:
        cfg.write(f"[core]\n\tworktree = {elsewhere}\n")
    with pytest.raises(gitops.GitError, match=r"core.worktree"):
        gitops.reset_hard(repo, "HEAD")
    assert not list(elsewhere.iterdir())


ARMING_BUILD = """\
#!/bin/bash
# A hostile build: rewrites the clone's git config and hooks, then compiles keep-going.
cat >> .git/config <<CFG
[core]
\tfsmonitor = "touch $MARK; false"
[filter "evil"]
\tclean = "touch $MARK; cat"
CFG
echo '* filter=evil' > .git/info/attributes
for h in pre-commit post-commit post-checkout reference-transaction; do
  printf '#!/bin/sh\\ntouch %s\\n' "$MARK" > .git/hooks/$h; chmod +x .git/hooks/$h
done
mkdir -p build
status=0
for f in csrc/*.cu; do
  hipcc -x hip --offload-arch=$1 -DUSE_ROCM -Icsrc -c $f -o build/$(basename $f .cu).o || status=1
done
exit $status
"""


def test_a_build_that_arms_the_clone_runs_nothing_on_the_host_through_port_pr_and_resume(
    tmp_path, git_repo, hipcc, nvcc, monkeypatch
):
    home, mark = tmp_path / "home", tmp_path / "mark"
    monkeypatch.setenv("ROCPORT_HOME", str(home))
    monkeypatch.setenv("MARK", str(mark))
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    repo = git_repo({**HEADER_FAULTS, "build.sh": ARMING_BUILD})
    result = start_port(load_job(make_job(tmp_path, repo, build_env={"MARK": str(mark)})))
    state = json.loads((home / "runs" / result.run_id / "state.json").read_text())
    assert result.status == "green", result.reason
    clone = Path(state["repo_dir"])
    assert f"touch {mark}" in (clone / ".git/config").read_text()  # the build did arm the clone
    assert [o for o in state["outcomes"] if o["kept"]]  # and kept patches were committed there
    env = {**os.environ, "ROCPORT_HOME": str(home)}
    pr = subprocess.run(
        [*ROCPORT, "pr", result.run_id], capture_output=True, text=True, env=env, timeout=300, check=False
    )
    assert pr.returncode == 0, pr.stderr[-2000:]
    assert list((home / "runs" / result.run_id / "pr").glob("*.patch"))
    again = resume_port(result.run_id)
    assert again.status == "green"
    assert not mark.exists()


def test_resume_after_kill_9_on_an_armed_clone_runs_nothing(tmp_path, git_repo, hipcc, nvcc):
    """The resume resets the clone to the last kept patch and commits again: still no repo command."""
    home, mark = tmp_path / "home", tmp_path / "mark"
    env = {**os.environ, "ROCPORT_HOME": str(home)}
    env.pop("OPENAI_BASE_URL", None)
    slow = ARMING_BUILD.replace("mkdir -p build\n", "sleep ${BUILD_SLEEP:-0}\nmkdir -p build\n")
    repo = git_repo({**HEADER_FAULTS, "build.sh": slow})
    job = [
        a for s in make_job(tmp_path, repo, build_sleep=3, build_env={"MARK": str(mark)}) for a in ("-c", s)
    ]
    proc = subprocess.Popen(
        [*ROCPORT, "port", *job, "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    run_id = None
    for line in proc.stdout:
        event = json.loads(line) if line.startswith("{") else {}
        run_id = event.get("run_id", run_id)
        if (
            event.get("event") == "build_started" and event.get("number") == 1
        ):  # the build after the first wave
            time.sleep(1)
            os.killpg(proc.pid, signal.SIGKILL)
            break
    proc.wait(timeout=60)
    assert run_id and proc.returncode == -signal.SIGKILL
    resumed = subprocess.run(
        [*ROCPORT, "port", "--resume", run_id, "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert f"touch {mark}" in (home / "runs" / run_id / "repo" / ".git/config").read_text()
    assert not mark.exists()


def test_rocport_fix_on_an_armed_checkout_runs_nothing(git_repo, tmp_path, hipcc, nvcc):
    root = git_repo(
        {"csrc/half.cu": "#include <cuda_runtime.h>\n__global__ void k(float* x) { x[0] = 1.f; }\n"}
    )
    mark = tmp_path / "mark"
    arm(root, mark)
    result = CliRunner().invoke(app, ["fix", str(root), "--from-scan", "--image", "local"])
    assert result.exit_code == 0, result.output
    assert gitops.current_branch(root).startswith("rocport/fix-")
    assert "Guard CUDA headers" in gitops.git(root, "log", "-1", "--format=%s")
    assert not mark.exists()


def test_code_in_the_container_cannot_rewrite_the_clones_git_dir(git_repo, rocm_image):
    from sandboxes.docker import DockerSandbox

    repo = git_repo({"a.txt": "a\n"})
    before = (repo / ".git/config").read_text()
    with DockerSandbox(rocm_image, repo) as sb:
        wrote = sb.run(
            "printf '[core]\\n\\tfsmonitor = touch /tmp/x\\n' >> .git/config; "
            "echo '#!/bin/sh' > .git/hooks/post-commit"
        )
        build = sb.run("echo built > out.txt && cat .git/HEAD")
    assert not wrote.ok and "Read-only file system" in wrote.stderr
    assert build.ok and "refs/heads/main" in build.stdout and (repo / "out.txt").exists()
    assert (repo / ".git/config").read_text() == before and not (repo / ".git/hooks/post-commit").exists()
