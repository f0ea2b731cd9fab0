"""`rocport port --review` through the real CLI and the real `openai` client against a scripted endpoint."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.agent.portfixture import FILES, make_job
from tests.agent.scripted_openai import ScriptedOpenAIServer, chat_response
from tests.agent.test_graph import SPIN

ROCPORT = [sys.executable, "-c", "from agent.cli import main; main()"]
SECRET = "sk-test-ROCPORT-SECRET-4242"


def test_review_pauses_then_resume_approve_applies_the_llm_patch(tmp_path, git_repo, hipcc, nvcc):
    repo = git_repo({"csrc/spin.cu": SPIN, "build.sh": FILES["build.sh"], ".gitignore": "build/\n"})
    home = tmp_path / "home"
    edit = {
        "path": "csrc/spin.cu",
        "search": "  while (atomicAdd(flag, 0) == 0) { __prof_trigger(0); }\n",
        "replace": "#ifdef USE_ROCM\n  while (atomicAdd(flag, 0) == 0) { __builtin_amdgcn_s_sleep(2); }\n"
        "#else\n  while (atomicAdd(flag, 0) == 0) { __prof_trigger(0); }\n#endif\n",
    }
    with ScriptedOpenAIServer() as server:
        server.queue += [
            (200, chat_response(tool_calls=[("propose_edit", edit)])),
            (200, chat_response(tool_calls=[("finish", {"rationale": "s_sleep on ROCm"})])),
        ]
        env = {**os.environ, "ROCPORT_HOME": str(home), "ROCPORT_TEST_KEY": SECRET}
        env.pop("OPENAI_BASE_URL", None)
        job = make_job(
            tmp_path,
            repo,
            f"llm.base_url={server.base_url}",
            "llm.model=scripted",
            "llm.api_key_env=ROCPORT_TEST_KEY",
        )
        args = [a for s in job for a in ("-c", s)]
        paused = subprocess.run(
            [*ROCPORT, "port", *args, "--review"],
            check=False,
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
            stdin=subprocess.DEVNULL,
        )
        assert paused.returncode == 3, paused.stderr[-2000:]
        run_id = paused.stderr.split("--resume ")[1].split()[0]
        assert "paused for review" in paused.stderr
        done = subprocess.run(
            [*ROCPORT, "port", "--resume", run_id, "--approve"],
            check=False,
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
            stdin=subprocess.DEVNULL,
        )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "green" in done.stderr and "builds 2" in done.stderr
    assert server.requests[0]["headers"]["authorization"] == f"Bearer {SECRET}"
    state = json.loads((home / "runs" / run_id / "state.json").read_text())
    [kept] = [o for o in state["outcomes"] if o["kept"]]
    assert kept["proposal"]["proposer"] == "llm:scripted"
    # The key reached the endpoint and nothing else: not the run dir, its logs, events, job or commits.
    for path in (home / "runs" / run_id).rglob("*"):
        if path.is_file() and ".git" not in path.parts:
            assert SECRET not in path.read_text(errors="replace"), path
    log = subprocess.run(
        ["git", "log", "-p", "--all"], cwd=state["repo_dir"], check=True, capture_output=True, text=True
    ).stdout
    assert SECRET not in log
