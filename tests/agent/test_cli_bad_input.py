"""Bad input through the real `rocport` entry point: one `rocport: error: ...` line, exit 2, no traceback.

Each case is what a user meets: a malformed or misspelled YAML, a missing file, image or run, a closed
LLM or server port, a binary log, a corrupt checkpoint. The error must say what was wrong and what to do.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.agent.portfixture import HEADER_FAULTS, make_job

ROCPORT = [sys.executable, "-m", "agent.cli"]
REPO_ROOT = Path(__file__).resolve().parents[2]


def rocport(
    home: Path, *args: str, cwd: Path | None = None, timeout: int = 300, extra_env: dict | None = None
) -> subprocess.CompletedProcess:
    env = {**os.environ, "ROCPORT_HOME": str(home), "COLUMNS": "200"}
    for name in ("OPENAI_BASE_URL", "GITHUB_TOKEN"):
        env.pop(name, None)
    env.update(extra_env or {})
    env["PYTHONPATH"] = str(REPO_ROOT)
    return subprocess.run(
        [*ROCPORT, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd or home.parent,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def one_line_error(result: subprocess.CompletedProcess, *needles: str, code: int = 2) -> str:
    """The run ended with exactly one `rocport: error:` line containing every needle (case-insensitive)."""
    out = result.stdout + result.stderr
    assert "Traceback" not in out, out[-3000:]
    assert result.returncode == code, out[-3000:]
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("rocport: error: "), result.stderr
    for needle in needles:
        assert needle.lower() in lines[0].lower(), lines[0]
    return lines[0]


def closed_port() -> int:
    """A 127.0.0.1 port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


# --- job, sweep and profile files -------------------------------------------------------------------


def test_port_malformed_job_yaml_names_file_and_line(tmp_path, home):
    (tmp_path / "job.yaml").write_text("framework:\n  profile: tinyserve\n bad: [\n")
    one_line_error(rocport(home, "port", "-c", "job.yaml"), "job.yaml", "line 3", "malformed YAML")


def test_port_unknown_key_in_yaml_and_override(tmp_path, home):
    (tmp_path / "job.yaml").write_text("framework:\n  profile: tinyserve\n  colour: red\n")
    one_line_error(
        rocport(home, "port", "-c", "job.yaml"), "unknown key framework.colour", "line 3", "spelling"
    )
    one_line_error(
        rocport(home, "port", "-c", "framework.profile=tinyserve", "-c", "budget.builds=3"),
        "unknown key budget",
        "spelling",
    )


def test_port_missing_job_file_and_bad_value(home):
    one_line_error(rocport(home, "port", "-c", "nope.yaml"), "nope.yaml", "not found")
    one_line_error(
        rocport(home, "port", "-c", "framework.profile=tinyserve", "-c", "strategy=magic"), "strategy"
    )


def test_profile_malformed_unknown_or_missing(tmp_path, home):
    (tmp_path / "prof.yaml").write_text("name: x\nbuild: [\n")
    one_line_error(
        rocport(home, "port", "-c", "framework.profile=prof.yaml"),
        "prof.yaml",
        "line 3",
        "malformed YAML",
        "fix the syntax",
    )
    one_line_error(rocport(home, "port", "-c", "framework.profile=nosuch"), "nosuch", "tinyserve")
    one_line_error(rocport(home, "scan", str(tmp_path), "--profile", "prof.yaml"), "prof.yaml")


def test_sweep_malformed_unknown_key_and_missing_file(tmp_path, home):
    (tmp_path / "bad.yaml").write_text("name: x\nframeworks: [\n")
    one_line_error(rocport(home, "sweep", "plan", "bad.yaml"), "bad.yaml", "malformed YAML")
    example = (REPO_ROOT / "agent/sweep/examples/tinyserve-nightly.yaml").read_text()
    (tmp_path / "typo.yaml").write_text(example + "colour: red\n")
    one_line_error(rocport(home, "sweep", "plan", "typo.yaml"), "colour", "unknown key", "spelling")
    for sub in ("plan", "run", "report"):
        one_line_error(rocport(home, "sweep", sub, "nosweep.yaml"), "nosweep.yaml", "pass the path")


def test_binary_file_given_as_yaml(tmp_path, home):
    (tmp_path / "blob.yaml").write_bytes(bytes(range(128, 256)) * 8)
    one_line_error(rocport(home, "port", "-c", "blob.yaml"), "blob.yaml", "not a text file")
    one_line_error(
        rocport(home, "port", "-c", f"framework.profile={tmp_path / 'blob.yaml'}"), "not a text file"
    )
    one_line_error(
        rocport(home, "scan", str(tmp_path), "--profile", str(tmp_path / "blob.yaml")), "not a text file"
    )
    one_line_error(rocport(home, "sweep", "plan", "blob.yaml"), "blob.yaml", "not a text file")


# --- missing things: runs, images, files, tasks ---------------------------------------------------


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


# --- unreachable endpoints --------------------------------------------------------------------------


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


# --- unparseable logs, corrupt checkpoints ----------------------------------------------------------


def test_binary_log_for_diagnose_and_fix(tmp_path, home, git_repo):
    (tmp_path / "bin.log").write_bytes(bytes(range(256)) * 16)
    one_line_error(rocport(home, "diagnose", "bin.log"), "bin.log", "binary")
    repo = git_repo(HEADER_FAULTS)
    one_line_error(rocport(home, "fix", str(repo), "--log", str(tmp_path / "bin.log")), "binary")


def test_weights_corrupt_checkpoint(tmp_path, home):
    trunc = tmp_path / "trunc"
    trunc.mkdir()
    (trunc / "model.safetensors").write_bytes((64).to_bytes(8, "little") + b'{"a":')
    one_line_error(rocport(home, "weights", "trunc"), "model.safetensors", "truncated", "re-download")
    huge = tmp_path / "huge"
    huge.mkdir()
    (huge / "model.safetensors").write_bytes((1 << 60).to_bytes(8, "little") + b"{}")
    one_line_error(rocport(home, "weights", "huge"), "model.safetensors")
    index = tmp_path / "index"
    index.mkdir()
    (index / "model.safetensors.index.json").write_text('{"weight_map": {')
    one_line_error(rocport(home, "weights", "index"), "index.json", "not valid JSON", "re-download")
    one_line_error(rocport(home, "weights", "absent"), "absent", "safetensors")


def test_port_corrupt_or_missing_checkpoint_stops_before_any_build(tmp_path, home, git_repo):
    repo = git_repo(HEADER_FAULTS)
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    (ckpt / "config.json").write_text("{}")
    (ckpt / "model-00001-of-00001.safetensors").write_bytes((120).to_bytes(8, "little") + b'{"w": {"dtype"')
    job = [a for s in make_job(tmp_path, repo, f"model.path={ckpt}") for a in ("-c", s)]
    one_line_error(
        rocport(home, "port", *job), "model-00001-of-00001.safetensors", "truncated", "re-download"
    )
    (ckpt / "model.safetensors.index.json").write_text('{"weight_map": ')
    one_line_error(rocport(home, "port", *job), "index.json", "re-download")
    job = [a for s in make_job(tmp_path, repo, f"model.path={tmp_path / 'absent'}") for a in ("-c", s)]
    one_line_error(rocport(home, "port", *job), "absent", "does not exist")
    assert not (home / "runs").is_dir() or not any((home / "runs").iterdir())  # nothing was started


def test_port_checkpoint_claiming_a_petabyte_stops_before_any_build(tmp_path, home, git_repo):
    """A header whose data_offsets point past the end of the file (a forged or cut shard) is caught from
    the header alone, in milliseconds, before anything is cloned or built."""
    import json

    repo = git_repo(HEADER_FAULTS)
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    header = json.dumps(
        {"w": {"dtype": "BF16", "shape": [1 << 25, 1 << 24], "data_offsets": [0, 10**15]}}
    ).encode()
    (ckpt / "model.safetensors").write_bytes(len(header).to_bytes(8, "little") + header + b"\0" * 64)
    job = [a for s in make_job(tmp_path, repo, f"model.path={ckpt}") for a in ("-c", s)]
    one_line_error(rocport(home, "port", *job), "model.safetensors", "1000000000000000", "re-download")
    assert not (home / "runs").is_dir() or not any((home / "runs").iterdir())


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


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["bench", "--url", "http://x"], ["--url", "--base-url", "rocport bench --help"]),
        (["prot"], ["no such command", "rocport --help"]),
        (["diagnose"], ["missing argument", "rocport diagnose --help"]),
        (["runs", "--limit", "many"], ["--limit", "integer"]),
        (["runs", "--limit", "0"], ["--limit", "greater than or equal to 1"]),
        (["scan", ".", "-f", "xml"], ["xml", "sarif"]),
    ],
)
def test_usage_mistakes_are_one_line_too(home, args, needles):
    one_line_error(rocport(home, *args), *needles)


def test_no_command_still_prints_the_help(home):
    result = rocport(home)
    assert "Traceback" not in result.stderr and "port" in result.stdout + result.stderr
    assert "Commands" in result.stdout + result.stderr


def test_damaged_run_directory_for_report_and_pr(home):
    run = home / "runs" / "20261202-000000-x-0001"
    run.mkdir(parents=True)
    (run / "state.json").write_text("{")
    for args in (["report", run.name], ["pr", run.name]):
        one_line_error(rocport(home, *args), "state.json", "damaged", "rocport port -c")
    # A process killed mid-append leaves a torn last event: the report is still written.
    (run / "state.json").write_text("{}")
    (run / "events.jsonl").write_text('{"event": "run_started", "ts": 1.0}\n{"event": "pha')
    result = rocport(home, "report", run.name, "--html")
    assert result.returncode == 0, result.stderr
    assert (run / "report.md").is_file() and (run / "report.html").is_file()


@pytest.mark.parametrize("damaged", ["runs.sqlite", "checkpoints.sqlite"])
def test_damaged_sqlite_under_rocport_home(tmp_path, home, git_repo, damaged):
    (home / damaged).write_bytes(bytes(range(256)) * 20)
    job = [a for s in make_job(tmp_path, git_repo(HEADER_FAULTS)) for a in ("-c", s)]
    one_line_error(rocport(home, "port", *job), damaged, "not a readable SQLite database", "move it aside")
    if damaged == "runs.sqlite":
        one_line_error(rocport(home, "runs"), damaged, "move it aside")


def test_sweep_results_database_that_is_not_one(tmp_path, home):
    (tmp_path / "bad.sqlite").write_bytes(bytes(range(256)) * 20)
    example = str(REPO_ROOT / "agent/sweep/examples/tinyserve-nightly.yaml")
    for sub in ("run", "report"):
        one_line_error(rocport(home, "sweep", sub, example, "--db", "bad.sqlite"), "bad.sqlite", "--db")


# --- targets and ports ------------------------------------------------------------------------------


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
