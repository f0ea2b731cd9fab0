"""PRs from a real run: clean branch, format-patch series that `git am` applies on a clean clone at the
original ref, push to a local bare repo, and the GitHub REST call against a local HTTP server."""

import json
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest

from tests.tools.run_fixture import git, make_run
from tools.pr import PRError, build_pr, open_pr, pr_request, push
from tools.report import RunView

TOKEN = "ghp_testtoken1234567890"


def test_branch_has_one_rewritten_commit_per_kept_fix(tmp_path):
    view = RunView.load(make_run(tmp_path))
    pr = build_pr(view, author="Port Bot <bot@example.com>")
    repo = tmp_path / "runs" / view.run_id / "repo"
    log = git(repo, "log", "--format=%s|%an <%ae>", f"{view.state['base_commit']}..{pr.branch}").splitlines()
    assert log == [
        "[ROCm] csrc/k.cu: map CUDA bf16 types to HIP types on ROCm|Port Bot <bot@example.com>",
        "[ROCm] csrc/k.cu: add a ROCm branch for the CUDA headers|Port Bot <bot@example.com>",
    ]
    body = git(repo, "log", "-1", "--format=%b", pr.commits[0])
    assert "'cuda_bf16.h' file not found" in body and "nvcc sm_90 csrc/k.cu: ok" in body
    assert [p.name[:4] for p in pr.patches] == ["0001", "0002"]
    text = pr.description.read_text()
    assert "| 1 | `'cuda_bf16.h' file not found` | cuda_header |" in text
    assert "no baseline — the server could not load the model on ROCm" in text
    assert "gpu_kernels: not run: no GPU" in text


def test_patch_series_applies_with_git_am_on_a_clean_clone(tmp_path):
    view = RunView.load(make_run(tmp_path))
    pr = build_pr(view)
    repo = tmp_path / "runs" / view.run_id / "repo"
    clean = tmp_path / "clean"
    subprocess.run(["git", "clone", "-q", str(repo), str(clean)], check=True)
    git(clean, "checkout", "-q", view.state["base_commit"])
    git(clean, "am", "-q", *map(str, pr.patches))
    assert (clean / "csrc/k.cu").read_text() == (repo / "csrc/k.cu").read_text()


def test_push_to_a_local_bare_remote(tmp_path):
    view = RunView.load(make_run(tmp_path))
    pr = build_pr(view)
    bare = tmp_path / "upstream.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    push(view, pr, str(bare))
    assert git(bare, "rev-parse", pr.branch) == pr.commits[-1]


class _GitHub(BaseHTTPRequestHandler):
    seen: ClassVar[list] = []

    def log_message(self, *a):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _GitHub.seen.append((self.path, dict(self.headers), body))
        ok = self.headers.get("Authorization") == f"Bearer {TOKEN}" and (
            not self.path.endswith("/pulls") or {"title", "head", "base", "body"} <= set(body)
        )
        data = json.dumps(
            {"html_url": "http://ghe.local/o/r/pull/7", "number": 7} if ok else {"message": "Bad credentials"}
        ).encode()
        self.send_response(201 if ok else 401)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def github():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _GitHub)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    _GitHub.seen = []
    yield f"http://127.0.0.1:{srv.server_address[1]}/api/v3"
    srv.shutdown()


def test_open_pr_against_a_github_enterprise_api(tmp_path, github, monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)  # the environment, not our code, is what changes here
    view = RunView.load(make_run(tmp_path))
    pr = build_pr(view)
    req = pr_request(pr, slug="o/r", base_branch="main", api_url=github, head_owner="fork")
    assert TOKEN not in req.redacted() and "Bearer ***" in req.redacted()
    assert open_pr(req) == "http://ghe.local/o/r/pull/7"
    path, headers, body = _GitHub.seen[0]
    assert path == "/api/v3/repos/o/r/pulls" and headers["Accept"] == "application/vnd.github+json"
    assert (
        body["head"] == f"fork:{pr.branch}" and body["base"] == "main" and body["title"].startswith("[ROCm]")
    )
    run_dir = tmp_path / "runs" / view.run_id
    for f in run_dir.rglob("*"):
        if f.is_file() and ".git" not in f.parts:
            assert TOKEN not in f.read_text(errors="replace"), f
    assert TOKEN not in git(run_dir / "repo", "log", "--all", "--format=%B")


def test_bad_token_and_missing_token_are_one_line_errors(tmp_path, github, monkeypatch):
    view = RunView.load(make_run(tmp_path))
    pr = build_pr(view)
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    with pytest.raises(PRError, match="GITHUB_TOKEN is not set"):
        pr_request(pr, slug="o/r", base_branch="main", api_url=github)
    monkeypatch.setenv("GITHUB_TOKEN", "wrong-token")
    with pytest.raises(PRError, match="HTTP 401") as info:
        open_pr(pr_request(pr, slug="o/r", base_branch="main", api_url=github))
    assert "wrong-token" not in str(info.value)


def test_draft_pr_with_labels_and_reviewers_using_the_gh_cli_login(tmp_path, github, monkeypatch):
    for name in ("GITHUB_TOKEN", "GH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    config = tmp_path / "gh"
    config.mkdir()
    (config / "hosts.yml").write_text(f"127.0.0.1:\n    oauth_token: {TOKEN}\n    user: me\n")
    monkeypatch.setenv("GH_CONFIG_DIR", str(config))  # where `gh auth login` keeps the token
    view = RunView.load(make_run(tmp_path))
    pr = build_pr(view)
    req = pr_request(
        pr, slug="o/r", base_branch="main", api_url=github, labels=["rocm", "amd"], reviewers=["maintainer"]
    )
    assert "/issues/{number}/labels" in req.redacted() and TOKEN not in req.redacted()
    assert open_pr(req) == "http://ghe.local/o/r/pull/7"
    (_, h1, b1), (p2, _, b2), (p3, _, b3) = _GitHub.seen
    assert b1["draft"] is True and h1["Authorization"] == f"Bearer {TOKEN}"
    assert (p2, b2) == ("/api/v3/repos/o/r/issues/7/labels", {"labels": ["rocm", "amd"]})
    assert (p3, b3) == ("/api/v3/repos/o/r/pulls/7/requested_reviewers", {"reviewers": ["maintainer"]})


def test_title_names_model_and_arch_and_each_patch_says_what_it_does_to_cuda(tmp_path):
    run = make_run(tmp_path)
    (run / "job.yaml").write_text(
        "framework: {profile: sglang}\nmodel: {path: /ckpt/GLM-5.2-FP8}\ntarget: {arch: gfx950}\n"
    )
    state = json.loads((run / "state.json").read_text())
    py = {
        "proposal": {
            "failure_signature": "weight_name:m.py:mtp",
            "proposer": "rule:weight_names",
            "files": ["python/sglang/srt/models/glm.py"],
            "rationale": "remap",
            "diff": "+        name = name.replace('mtp.shared', 'mtp.shared_experts')\n",
        },
        "applied": True,
        "kept": True,
        "reason": "",
        "commit": state["outcomes"][0]["commit"],
        "checks": [
            {"name": "py_compile python/sglang/srt/models/glm.py", "ok": True, "cmd": "", "detail": ""}
        ],
    }
    state["outcomes"].append(py)
    state["known_failures"]["weight_name:m.py:mtp"] = {"kind": "weight_name", "message": "missing mtp.shared"}
    state["accuracy"] = {"status": "passed", "detail": "greedy outputs match the reference on 8 prompts"}
    (run / "state.json").write_text(json.dumps(state))
    from tools.pr_text import pr_description, pr_title

    view = RunView.load(run)
    assert pr_title(view) == (
        "[ROCm] GLM-5.2-FP8 on gfx950: add a ROCm branch for the CUDA headers; "
        "map CUDA bf16 types to HIP types on ROCm (+1 more)"
    )
    text = pr_description(view, ["a" * 40, "b" * 40, "c" * 40])
    assert "The CUDA path is unchanged" not in text
    assert "csrc/k.cu: CUDA path unchanged — the change is under a ROCm guard" in text
    assert (
        "python/sglang/srt/models/glm.py: Python that CUDA runs too — this change also applies on CUDA"
        in text
    )
    assert "## Accuracy check" in text and "greedy outputs match the reference on 8 prompts" in text


def test_signoff_adds_the_dco_line_to_every_commit(tmp_path):
    view = RunView.load(make_run(tmp_path))
    pr = build_pr(view, author="Ada Lovelace <ada@example.com>", signoff=True)
    bodies = git(
        tmp_path / "runs" / view.run_id / "repo", "log", "--format=%B%x00", f"{pr.base_commit}..{pr.branch}"
    )
    messages = [b.strip() for b in bodies.split("\x00") if b.strip()]
    assert len(messages) == 2 and all(
        m.endswith("Signed-off-by: Ada Lovelace <ada@example.com>") for m in messages
    )
