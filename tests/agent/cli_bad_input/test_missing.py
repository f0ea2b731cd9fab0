"""Missing runs, images, files and tasks: the one error line says which and what to do (a port or demo
that stopped for a missing image names the run to resume).
"""

from __future__ import annotations

import pytest

from tests.agent.cli_bad_input.cli import REPO_ROOT, one_line_error, rocport
from tests.agent.portfixture import HEADER_FAULTS, make_job


@pytest.mark.parametrize(
    "args",
    [
        ["report", "nosuchrun"],
        ["pr", "nosuchrun"],
        ["port", "--resume", "nosuchrun"],
        ["report", "../../etc"],
    ],
)
def test_missing_run_id(home, args):
    one_line_error(rocport(home, *args), "runs")


def test_runs_with_no_runs_says_how_to_start(home):
    result = rocport(home, "runs")
    assert result.returncode == 0 and "rocport port -c job.yaml" in result.stdout


def test_port_missing_image_stops_resumable_with_run_id(tmp_path, home, git_repo, docker_daemon):
    repo = git_repo(HEADER_FAULTS)
    job = make_job(tmp_path, repo, "sandbox.backend=docker", "target.image=nope:1")
    line = one_line_error(
        rocport(home, "port", *[a for s in job for a in ("-c", s)]), "nope:1", "docker pull"
    )
    run_id = line.split("--resume ")[1].strip("` ")
    assert (home / "runs" / run_id / "job.yaml").is_file()
    listed = rocport(home, "runs")
    assert run_id in listed.stdout and "failed" in listed.stdout


def test_image_check_missing_image_and_unknown_recipe(home, docker_daemon):
    one_line_error(rocport(home, "image", "check", "nope:1"), "nope:1", "docker pull")
    one_line_error(rocport(home, "image", "build", "9.9"), "9.9", "6.4")


def test_missing_paths_and_tasks(tmp_path, home):
    one_line_error(rocport(home, "scan", str(tmp_path / "absent")), "no such file")
    one_line_error(rocport(home, "diagnose", "absent.log"), "absent.log", "not found")
    one_line_error(rocport(home, "fix", str(tmp_path / "absent"), "--log", "x.log"), "not a directory")
    one_line_error(rocport(home, "eval", "nosuchtask"), "nosuchtask", "glm52_mi355x")
    one_line_error(rocport(home, "eval", "-s", "bogus"), "bogus", "rules+llm")
    one_line_error(rocport(home, "demo", "--task", "nosuchtask"), "nosuchtask")
    one_line_error(
        rocport(home, "eval", "cub_rmsnorm", "--output", str(tmp_path / "no" / "e.json")),
        "--output",
        "create it first",
    )


def test_demo_with_a_missing_image_is_one_line_naming_the_run(tmp_path, home, docker_daemon):
    tasks = REPO_ROOT / "evals" / "tasks"
    (tmp_path / "patches").symlink_to(tasks / "patches")
    (tmp_path / "solutions").symlink_to(tasks / "solutions")
    (tmp_path / "task.yaml").write_text(
        (tasks / "cuda_header_activation.yaml").read_text() + "image: nope:1\n"
    )
    line = one_line_error(
        rocport(home, "demo", "--task", str(tmp_path / "task.yaml"), "--workdir", str(tmp_path / "work")),
        "nope:1",
        "docker pull",
        "--resume",
    )
    run_id = line.split("--resume ")[1].strip("` ")
    assert (home / "runs" / run_id / "job.yaml").is_file()
