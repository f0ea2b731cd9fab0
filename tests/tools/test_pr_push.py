"""`rocport pr --push FORK_URL --open` in one step, through the real CLI: the branch reaches a real git
smart-HTTP server that demands the token, the PR request reaches a local HTTP server standing in for
the GitHub REST API, and the token is nowhere in the output, the run dir, the clone's config or commits."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from tests.conftest import REPO_ROOT
from tests.tools.git_http import serve_git
from tests.tools.run_fixture import git, make_run

TOKEN = "ghp_pushtoken0123456789abcdef"
ROCPORT = [sys.executable, "-c", "from agent.cli import main; main()"]


class _Api(BaseHTTPRequestHandler):
    seen: ClassVar[list] = []

    def log_message(self, *a):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Api.seen.append((self.path, self.headers.get("Authorization"), body))
        data = json.dumps({"html_url": "http://gh.local/up/stream/pull/7", "number": 7}).encode()
        self.send_response(201)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def servers(tmp_path):
    git_server, stop_git = serve_git(tmp_path / "srv", TOKEN)
    api = ThreadingHTTPServer(("127.0.0.1", 0), _Api)
    threading.Thread(target=api.serve_forever, daemon=True).start()
    _Api.seen = []
    yield git_server, f"http://127.0.0.1:{api.server_address[1]}/api/v3"
    api.shutdown()
    stop_git()


def _rocport(home: Path, *args: str, token: str = TOKEN) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_TOKEN", "GH_TOKEN", "GITHUB_API_URL")}
    (home / "gh").mkdir(exist_ok=True)  # no stored `gh` login of this machine's user
    env.update(
        ROCPORT_HOME=str(home), GH_TOKEN=token, GH_CONFIG_DIR=str(home / "gh"), PYTHONPATH=str(REPO_ROOT)
    )
    return subprocess.run(
        [*ROCPORT, *args], check=False, capture_output=True, text=True, env=env, timeout=300
    )


def _run(tmp_path: Path) -> tuple[str, Path]:
    run = make_run(tmp_path)
    (run / "job.yaml").write_text(
        "framework: {profile: sglang}\nmodel: {path: /ckpt/GLM-5.2-FP8}\ntarget: {arch: gfx950}\n"
    )
    return run.name, run


def test_push_to_a_fork_url_and_open_the_pr_in_one_step_without_leaking_the_token(tmp_path, servers):
    git_server, api = servers
    fork = git_server.bare("me/stream.git")
    run_id, run = _run(tmp_path)
    args = ["pr", run_id, "--push", f"{git_server.url}/me/stream.git", "--open", "--repo", "up/stream"]
    args += ["--api-url", api, "--signoff", "--author", "Ada Lovelace <ada@example.com>"]
    done = _rocport(tmp_path, *args, "--label", "rocm", "--reviewer", "maintainer")
    assert done.returncode == 0, done.stderr
    branch = f"rocport/pr-{run_id}"
    assert f"pushed {branch} to {git_server.url}/me/stream.git" in done.stdout
    assert "opened http://gh.local/up/stream/pull/7" in done.stdout
    # the branch arrived, one signed-off commit per kept fix
    base = json.loads((run / "state.json").read_text())["base_commit"]
    messages = git(fork, "log", "--format=%B%x00", f"{base}..{branch}").split("\x00")
    signed = [m for m in messages if m.strip()]
    assert len(signed) == 2 and all("Signed-off-by: Ada Lovelace <ada@example.com>" in m for m in signed)
    assert any(auth.startswith("Basic ") for _, auth in git_server.seen)
    # the PR: draft, from the fork's branch, titled by model + arch + what the fixes do, then labels, reviewers
    (path, auth, pr), (p2, _, labels), (p3, _, reviewers) = _Api.seen
    assert path == "/api/v3/repos/up/stream/pulls" and auth == f"Bearer {TOKEN}"
    assert pr["draft"] is True and pr["head"] == f"me:{branch}" and pr["base"] == "main"
    assert pr["title"] == (
        "[ROCm] GLM-5.2-FP8 on gfx950: add a ROCm branch for the CUDA headers; "
        "map CUDA bf16 types to HIP types on ROCm"
    )
    assert (p2, labels) == ("/api/v3/repos/up/stream/issues/7/labels", {"labels": ["rocm"]})
    assert (p3, reviewers) == (
        "/api/v3/repos/up/stream/pulls/7/requested_reviewers",
        {"reviewers": ["maintainer"]},
    )
    # the token (raw or as the Basic header git sent) is nowhere rocport writes
    basic = base64.b64encode(f"x-access-token:{TOKEN}".encode())
    for secret in (TOKEN.encode(), basic):
        assert secret.decode() not in done.stdout + done.stderr
        for f in [*run.rglob("*"), *fork.rglob("*")]:
            if f.is_file():
                assert secret not in f.read_bytes(), f
    for repo in (run / "repo", fork):
        assert TOKEN not in git(repo, "config", "--list") and TOKEN not in git(
            repo, "log", "--all", "--format=%B"
        )


def test_a_wrong_token_is_a_one_line_error_and_pushes_nothing(tmp_path, servers):
    git_server, api = servers
    fork = git_server.bare("me/stream.git")
    run_id, _ = _run(tmp_path)
    done = _rocport(
        tmp_path,
        "pr",
        run_id,
        "--push",
        f"{git_server.url}/me/stream.git",
        "--api-url",
        api,
        token="ghp_wrong",
    )
    assert done.returncode == 2 and done.stderr.startswith("rocport: error: ")
    assert len(done.stderr.strip().splitlines()) == 1 and "write access" in done.stderr
    assert "ghp_wrong" not in done.stderr and not git(fork, "branch", "--list")


def test_a_clone_that_rewrites_urls_gets_no_token(tmp_path, servers):
    git_server, api = servers
    git_server.bare("me/stream.git")
    run_id, run = _run(tmp_path)
    git(run / "repo", "config", f"url.{git_server.url}/evil/.insteadOf", f"{git_server.url}/me/")
    done = _rocport(tmp_path, "pr", run_id, "--push", f"{git_server.url}/me/stream.git", "--api-url", api)
    assert done.returncode == 2 and "rewrites URLs" in done.stderr
    assert not git_server.seen  # nothing was sent anywhere
