"""Unreachable or refusing endpoints and unusable targets: a closed LLM or server port, a bad PR remote,
token or API, an arch the image cannot build, a serve port out of range or taken.
"""

from __future__ import annotations

import socket

from tests.agent.cli_bad_input.cli import closed_port, one_line_error, rocport
from tests.agent.portfixture import HEADER_FAULTS, make_job


def test_port_unreachable_llm_endpoint_stops_resumable(tmp_path, home, git_repo, hipcc):
    repo = git_repo(HEADER_FAULTS)
    job = make_job(
        tmp_path, repo, f"llm.base_url=http://127.0.0.1:{closed_port()}/v1", "llm.model=x", "strategy=llm"
    )
    line = one_line_error(
        rocport(home, "port", *[a for s in job for a in ("-c", s)]),
        "cannot reach the LLM endpoint",
        "--resume",
    )
    run_id = line.split("--resume ")[1].strip("` ")
    # Resuming with the endpoint still down stops the same way: the run is still there to continue.
    one_line_error(rocport(home, "port", "--resume", run_id), "cannot reach the LLM endpoint", run_id)


def test_bench_closed_port_and_bad_inputs(tmp_path, home):
    url = f"http://127.0.0.1:{closed_port()}"
    one_line_error(
        rocport(
            home, "bench", "--base-url", url, "--model", "x", "--num-prompts", "2", "--isl", "8", "--osl", "2"
        ),
        "cannot connect",
        "server running",
    )
    one_line_error(
        rocport(home, "bench", "--base-url", url, "--model", "x", "--preset", "nosuch"),
        "nosuch",
        "glm52-mi355x",
    )
    one_line_error(
        rocport(
            home,
            "bench",
            "--base-url",
            url,
            "--model",
            "x",
            "--output",
            str(tmp_path / "no" / "dir" / "r.json"),
        ),
        "--output",
        "create it first",
    )
    (tmp_path / "bad.json").write_text("{")
    one_line_error(rocport(home, "bench", "compare", "bad.json", "bad.json"), "bad.json", "not JSON")
    one_line_error(rocport(home, "bench", "compare", "a.json", "b.json"), "a.json")


def test_pr_bad_remote_token_endpoint_or_author_keeps_the_patches(tmp_path, home, git_repo, hipcc, nvcc):
    repo = git_repo(HEADER_FAULTS)
    job = [a for s in make_job(tmp_path, repo, "strategy=rules") for a in ("-c", s)]
    ported = rocport(home, "port", *job)
    assert ported.returncode == 0, ported.stderr[-2000:]
    run_id = ported.stderr.split("run id: ")[1].split()[0]
    assert "resumed run" not in ported.stderr  # a build-only job has no server to bench; it was not resumed
    one_line_error(rocport(home, "pr", run_id, "--push", "nosuchremote"), "nosuchremote", "remote -v")
    one_line_error(rocport(home, "pr", run_id, "--open"), "--repo OWNER/NAME")
    one_line_error(rocport(home, "pr", run_id, "--open", "--repo", "o/n"), "GITHUB_TOKEN")
    line = one_line_error(
        rocport(
            home,
            "pr",
            run_id,
            "--open",
            "--repo",
            "o/n",
            "--api-url",
            f"http://127.0.0.1:{closed_port()}/api/v3",
            extra_env={"GITHUB_TOKEN": "ghp-test-token"},
        ),
        "cannot reach",
        "--api-url",
    )
    assert "ghp-test-token" not in line
    one_line_error(rocport(home, "pr", run_id, "--author", "no email"), "Name <email>")
    # Nothing was lost: the PR branch still holds one commit per kept patch, and the run reports.
    ok = rocport(home, "pr", run_id)
    assert ok.returncode == 0 and "1 commit(s)" in ok.stdout, ok.stdout + ok.stderr
    assert rocport(home, "report", run_id, "--html").returncode == 0
    assert (home / "runs" / run_id / "report.html").is_file()


def test_arch_the_image_cannot_build_is_refused_before_anything_starts(tmp_path, home, git_repo, rocm_image):
    repo = git_repo(HEADER_FAULTS)
    job = [
        a
        for s in make_job(
            tmp_path, repo, "sandbox.backend=docker", f"target.image={rocm_image}", "target.arch=gfx1100"
        )
        for a in ("-c", s)
    ]
    line = one_line_error(rocport(home, "port", *job), "target.arch gfx1100", rocm_image, "gfx942")
    assert "pick one of those" in line
    assert not (home / "runs").is_dir() or not any((home / "runs").iterdir())
    one_line_error(
        rocport(home, "fix", str(repo), "--from-scan", "--image", rocm_image, "--arch", "gfx1100"),
        "--arch gfx1100",
        "gfx950",
    )
    one_line_error(rocport(home, "port", *job[:-2], "-c", "target.arch=sm_90"), "sm_90", "not a gfx target")


def test_server_port_out_of_range_or_taken_is_refused(tmp_path, home, git_repo):
    repo = git_repo(HEADER_FAULTS)
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    base = make_job(tmp_path, repo, f"model.path={model}")
    job = [a for s in [*base, "serve.port=70000"] for a in ("-c", s)]
    one_line_error(rocport(home, "port", *job), "serve.port", "65535")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        job = [a for s in [*base, f"serve.port={port}"] for a in ("-c", s)]
        one_line_error(rocport(home, "port", *job), f"serve.port {port}", "in use")
    assert not (home / "runs").is_dir() or not any((home / "runs").iterdir())
    one_line_error(
        rocport(
            home, "bench", "--base-url", "http://127.0.0.1:99999", "--model", "m", "--isl", "4", "--osl", "2"
        ),
        "1 to 65535",
    )
