"""A canary secret under ten names in the environment of a real `rocport port` (Docker backend, real
hipcc in the ROCm image, real git, real SQLite) and `rocport pr`: it is found nowhere afterwards —
not in the container's config or env, the build and unit-compile logs, the run dir, the PR series,
the SQLite stores, or any git object of the clone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.agent.portfixture import BUILD_SH, HEADER_FAULTS, make_job
from tests.security.test_secrets import SECRET_NAMES

ROCPORT = [sys.executable, "-c", "from agent.cli import main; main()"]
CANARY = "canary-91d2c4e8-do-not-leak"
# The build prints everything it can see of its environment, so a leak would land in the build log.
LEAKY_BUILD = BUILD_SH.replace(
    "sleep ${BUILD_SLEEP:-0}\n", "sleep ${BUILD_SLEEP:-0}\nenv\ntr '\\0' '\\n' < /proc/1/environ || true\n"
)


def _container_of(clone: Path, deadline_s: float = 120) -> str:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        out = subprocess.run(
            ["docker", "ps", "-q", "--filter", f"label=rocport.workdir={clone}"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.split()
        if out:
            return out[0]
        time.sleep(0.2)
    raise AssertionError(f"no container for {clone}")


def _files_holding(root: Path, needle: bytes) -> list[str]:
    hits = []
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            try:
                if needle in path.read_bytes():
                    hits.append(str(path))
            except OSError:
                continue
    return hits


@pytest.mark.parametrize("backend", ["docker", "local"])
def test_a_canary_under_ten_names_leaks_nowhere(backend, request, tmp_path, git_repo, nvcc):
    rocm_image = request.getfixturevalue("rocm_image" if backend == "docker" else "hipcc")
    home = tmp_path / "home"
    repo = git_repo({**HEADER_FAULTS, "build.sh": LEAKY_BUILD})
    env = {**os.environ, "ROCPORT_HOME": str(home), **dict.fromkeys(SECRET_NAMES, CANARY)}
    env.pop("OPENAI_BASE_URL", None)
    job = make_job(
        tmp_path,
        repo,
        *(["sandbox.backend=docker", f"target.image={rocm_image}"] if backend == "docker" else []),
        build_sleep=3,
    )
    proc = subprocess.Popen(
        [*ROCPORT, "port", *[a for s in job for a in ("-c", s)], "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    run_id, inspected, execd = None, "", ""
    for line in proc.stdout:
        event = json.loads(line) if line.startswith("{") else {}
        run_id = event.get("run_id", run_id)
        if event.get("event") == "build_started" and not inspected and backend == "docker":
            cid = _container_of(home / "runs" / run_id / "repo")
            inspected = subprocess.run(
                ["docker", "inspect", cid], capture_output=True, text=True, check=False
            ).stdout
            execd = subprocess.run(
                ["docker", "exec", cid, "sh", "-c", "env; cat /proc/1/environ"],
                capture_output=True,
                text=True,
                check=False,
            ).stdout
    proc.wait(timeout=900)
    assert proc.returncode == 0, proc.stderr.read()[-2000:]
    if backend == "docker":
        assert json.loads(inspected)[0]["HostConfig"]["NetworkMode"] == "none"
        assert "PATH=" in execd and CANARY not in inspected + execd
    run = home / "runs" / run_id
    state = json.loads((run / "state.json").read_text())
    assert state["status"] == "green" and [o for o in state["outcomes"] if o["kept"]]
    logs = list((run / "logs").glob("*"))
    assert any("PATH=" in p.read_text(errors="replace") for p in logs)  # the build did print its env
    pr = subprocess.run(
        [*ROCPORT, "pr", run_id], capture_output=True, text=True, env=env, timeout=300, check=False
    )
    assert pr.returncode == 0, pr.stderr[-2000:]
    assert list((run / "pr").glob("*.patch")) and (run / "pr" / "PR.md").exists()
    assert _files_holding(home, CANARY.encode()) == []  # run dir, logs, PR, runs.sqlite, checkpoints
    objects = subprocess.run(
        ["git", "cat-file", "--batch-all-objects", "--batch"],
        cwd=run / "repo",
        capture_output=True,
        check=True,
    ).stdout
    assert objects and CANARY.encode() not in objects
    texts = [p.read_text() for p in (run / "pr").glob("*.patch")] + [(run / "pr" / "PR.md").read_text()]
    for text in [*texts, (run / "report.md").read_text()]:
        assert str(tmp_path) not in text and str(home) not in text  # repo-relative paths only
