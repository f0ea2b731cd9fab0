"""A real 2x2x1 sweep over the fixture framework, through `rocport sweep` in ROCm containers:
night 1 passes; night 2 brings a build fault on one ref and a slower server on the other, is killed
mid-run and resumed, and its regressions and clusters are reported; a local Ray cluster runs night 1
again with the same results."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest

from agent.sweep.analysis import clusters, regressions
from agent.sweep.results import ResultStore
from evals.taskdefs import TASKS_DIR, copy_framework
from tests.browser import render

pytestmark = pytest.mark.slow  # long end-to-end runs: started first in a parallel run

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
}


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, env={**os.environ, **GIT_ENV})


def _rocport(home: Path, *args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "agent.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "ROCPORT_HOME": str(home)},
        timeout=1800,
        **kw,
    )


@pytest.fixture(scope="module")
def matrix(tmp_path_factory, rocm_image):
    root = tmp_path_factory.mktemp("sweep")
    fw = copy_framework("tinyserve", root / "tinyserve")
    _git(fw, "init", "-q", "-b", "main")
    _git(fw, "add", "-A")
    _git(fw, "commit", "-qm", "tinyserve")
    _git(fw, "branch", "stable")
    for name, extra in (("tiny-a", []), ("tiny-b", ["--seed", "7"])):
        subprocess.run(
            [sys.executable, "-m", "tinyserve.make_checkpoint", "--out", str(root / name), *extra],
            cwd=fw,
            check=True,
            capture_output=True,
            env={**os.environ, "PYTHONPATH": str(fw)},
        )
    spec = root / "sweep.yaml"
    spec.write_text(f"""\
name: e2e
frameworks:
  - {{name: tiny, profile: tinyserve, repo: {fw}, refs: [main, stable]}}
models:
  - {{name: tiny-a, path: {root / "tiny-a"}}}
  - {{name: tiny-b, path: {root / "tiny-b"}}}
targets:
  - {{image: "{rocm_image}", arch: gfx942}}
workloads:
  - {{name: smoke, isl: 32, osl: 8, num_prompts: 8, max_concurrency: 2}}
""")
    return {"root": root, "fw": fw, "spec": spec, "home": root / "home", "db": root / "results.sqlite"}


def test_plan_prints_four_cells(matrix):
    out = _rocport(matrix["home"], "sweep", "plan", str(matrix["spec"]))
    assert out.returncode == 0, out.stderr
    assert "4 cells" in out.stdout and out.stdout.count("tiny@") == 4


def test_two_nights_flag_the_regressions_and_resume_after_a_kill(matrix):
    home, spec, db, fw = matrix["home"], matrix["spec"], matrix["db"], matrix["fw"]
    night1 = _rocport(home, "sweep", "run", str(spec), "--db", str(db), "--night", "2026-12-01")
    assert night1.returncode == 0, night1.stdout + night1.stderr
    first = ResultStore(db).results()
    assert [(r.cell_key, r.status) for r in first] == [
        (k, "passed") for k in sorted(r.cell_key for r in first)
    ]
    assert all(r.output_tok_s and r.provenance["framework_commit"] for r in first)
    # every cell is a port run with its own report; one build (one clone) per framework ref, the
    # group's later cell ran the graph from the load check on it
    runs = [home / "runs" / r.provenance["run_id"] for r in first]
    assert len(set(runs)) == 4 and all((run / "report.md").is_file() for run in runs)
    assert sum((run / "repo").is_dir() for run in runs) == 2

    # night 2: main gets a CUDA-only header in a kernel, stable a server that sleeps per token
    _git(fw, "apply", str(TASKS_DIR / "patches/activation_cuda_headers.patch"))
    _git(fw, "commit", "-qam", "fused activation includes cuda_runtime.h")
    _git(fw, "checkout", "-q", "stable")
    server = fw / "tinyserve/launch_server.py"
    source = server.read_text()
    slower = source.replace(
        'default=0.0, help="simulated device cost per decoded sequence per step"',
        'default=40.0, help="simulated device cost per decoded sequence per step"',
    )
    assert slower != source, "the night-2 setup no longer finds tinyserve's --token-delay-ms default"
    server.write_text(slower)
    _git(fw, "commit", "-qam", "slower server")
    _git(fw, "checkout", "-q", "main")

    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agent.cli",
            "sweep",
            "run",
            str(spec),
            "--db",
            str(db),
            "--night",
            "2026-12-02",
        ],
        env={**os.environ, "ROCPORT_HOME": str(home)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline and _rows(db, "2026-12-02") < 1:
        time.sleep(1)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done_before = _rows(db, "2026-12-02")
    assert 1 <= done_before < 4
    resumed = _rocport(home, "sweep", "run", str(spec), "--db", str(db), "--night", "2026-12-02")
    assert resumed.returncode == 0, resumed.stderr
    assert f"{done_before} already recorded" in resumed.stdout
    assert _rows(db, "2026-12-02") == 4

    results = ResultStore(db).results()
    found = sorted((g.cell_key, g.what) for g in regressions(results))
    assert found == [
        ("tiny@main/tiny-a/gfx942/smoke", "stage_lost"),
        ("tiny@main/tiny-b/gfx942/smoke", "stage_lost"),
        ("tiny@stable/tiny-a/gfx942/smoke", "throughput"),
        ("tiny@stable/tiny-b/gfx942/smoke", "throughput"),
    ]
    [cluster] = [c for c in clusters(results) if c.kind == "cuda_header"]
    assert len(cluster.cells) == 2 and cluster.first_seen == "2026-12-02" and cluster.streak == 1

    page, md = matrix["root"] / "dash.html", matrix["root"] / "summary.md"
    rep = _rocport(
        home, "sweep", "report", str(spec), "--db", str(db), "--html", str(page), "--markdown", str(md)
    )
    assert rep.returncode == 0, rep.stderr
    assert "regression" in rep.stdout and "## Regressions (4)" in md.read_text()
    gated = _rocport(home, "sweep", "report", str(spec), "--db", str(db), "--fail-on", "error,regression")
    assert gated.returncode == 1 and "night 2026-12-02 fails --fail-on error,regression" in gated.stderr
    assert "2 cell(s) did not pass" in gated.stderr and "4 regression(s)" in gated.stderr
    as_json = _rocport(home, "sweep", "report", str(spec), "--db", str(db), "--format", "json")
    rows = json.loads(as_json.stdout)
    assert {r["cell"] for r in rows} == {r.cell_key for r in results} and all(
        len(r["commit"]) == 12 for r in rows
    )
    dom, errors, _ = render(page, matrix["root"])
    assert errors == [] and "Failure clusters (1)" in dom


def _rows(db: Path, night: str) -> int:
    if not db.exists():
        return 0
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT count(*) FROM cell_results WHERE night=?", (night,)).fetchone()[0]


@contextmanager
def _ray_head(env: dict[str, str], log: Path) -> Iterator[str]:
    """A one-node Ray cluster of this test alone; yields its address. `ray start --block` runs in a
    session of its own and its Ray processes die with it, so stopping it is killing that session:
    `ray stop` would stop every Ray cluster on the machine, other test runs' included."""
    ray = str(Path(sys.executable).parent / "ray")
    with log.open("w") as out:
        head = subprocess.Popen(
            [
                ray,
                "start",
                "--head",
                "--block",
                "--node-ip-address=127.0.0.1",
                "--port=0",
                "--num-cpus=2",
                "--include-dashboard=false",
                "--disable-usage-stats",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 300
        while "--address='" not in log.read_text():
            assert head.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(1)
        yield log.read_text().split("--address='")[1].split("'")[0]
    finally:
        with suppress(ProcessLookupError):  # the session may be gone already
            os.killpg(head.pid, signal.SIGTERM)
        try:
            head.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(head.pid, signal.SIGKILL)
            head.wait()


def test_the_same_night_on_a_local_ray_cluster(matrix):
    home, spec = matrix["home"], matrix["spec"]
    _git(matrix["fw"], "checkout", "-q", "main")
    db = matrix["root"] / "ray.sqlite"
    env = {**os.environ, "ROCPORT_HOME": str(home)}
    with _ray_head(env, matrix["root"] / "ray-head.log") as address:
        out = _rocport(
            home, "sweep", "run", str(spec), "--db", str(db), "--night", "2026-12-02", "--ray", address
        )
    assert out.returncode == 0, out.stdout + out.stderr
    local = {
        r.cell_key: (r.status, r.stages)
        for r in ResultStore(matrix["db"]).results()
        if r.night == "2026-12-02"
    }
    on_ray = {r.cell_key: (r.status, r.stages) for r in ResultStore(db).results()}
    assert on_ray == local
