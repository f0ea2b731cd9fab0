"""The run's compile services: nvcc's cache outlives the run, so a CUDA build of the final tree reuses it."""

from __future__ import annotations

import os
import time
from pathlib import Path

from agent.loop.compilers import Compilers
from agent.loop.rundir import RunDir
from sandboxes.compile_service import kept_build_prefix
from sandboxes.local import LocalSandbox

KERNEL = "__global__ void twice(float* x) { x[threadIdx.x] *= 2.0f; }\n"
UNIT = "nvcc -arch=sm_90 -O2 -c k.cu -o {out}"


def _run(tmp_path: Path, run_id: str) -> tuple[Path, RunDir, Compilers]:
    """A repo with one kernel, a run dir, and the run's compile services over it."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "k.cu").write_text(KERNEL)
    rundir = RunDir(run_id, home=tmp_path / "home")
    rundir.create("{}")
    return repo, rundir, Compilers(repo=repo, rundir=rundir)


def test_a_cuda_build_after_the_run_reuses_the_cuda_checks_compiles(nvcc, tmp_path: Path):
    repo, rundir, compilers = _run(tmp_path, "run-1")
    assert compilers.cuda is not None and compilers.cuda.run(UNIT.format(out=tmp_path / "check.o")).ok
    compilers.close()

    prefix = kept_build_prefix(rundir.cuda_cache)
    with LocalSandbox(repo) as box:
        build = box.run(prefix + UNIT.format(out="k.o") + " && echo built", timeout=600)
    ledger = next(rundir.cuda_cache.glob(".compile-*/cache/ledger")).read_text().splitlines()
    assert build.ok and build.stdout.strip() == "built"
    assert [line.split("\t")[0] for line in ledger] == ["miss", "direct"]  # the build compiled nothing
    assert (repo / "k.o").read_bytes() == (tmp_path / "check.o").read_bytes()


def test_a_run_without_cuda_checks_leaves_nothing_to_reuse(tmp_path: Path):
    rundir = RunDir("run-2", home=tmp_path / "home")
    rundir.create("{}")
    assert kept_build_prefix(rundir.cuda_cache) == ""


def test_a_run_whose_cuda_checks_only_preprocessed_leaves_no_cache_in_the_way(nvcc, tmp_path: Path):
    # the CUDA identity proof runs nvcc -E through the service: nothing a later build could reuse, and
    # a build through the shims would pay their start-up and dependency hashing on every compile
    _, rundir, compilers = _run(tmp_path, "run-3")
    assert compilers.cuda is not None and compilers.cuda.run("nvcc -arch=sm_90 -E k.cu").ok
    compilers.close()
    assert list(rundir.cuda_cache.glob(".compile-*/env.sh")) and kept_build_prefix(rundir.cuda_cache) == ""


def _workers_over(folder: Path) -> list[str]:
    """Live processes whose command line names `folder` (a compile service's worker over its spool)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = (Path("/proc") / pid / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if str(folder) in cmdline and "compile_worker.py" in cmdline:
            found.append(cmdline)
    return found


def test_nvccs_service_started_ahead_is_the_one_the_first_check_uses(nvcc, tmp_path: Path):
    _, rundir, compilers = _run(tmp_path, "run-4")
    compilers.prepare_cuda()  # returns at once; the first CUDA check waits for it, if at all
    service = compilers.cuda
    assert service is not None and service.alive()
    assert service.run(UNIT.format(out=tmp_path / "check.o")).ok
    assert compilers.cuda is service and len(list(rundir.cuda_cache.glob(".compile-*"))) == 1
    compilers.close()
    assert not service.alive() and _workers_over(rundir.cuda_cache) == []


def test_a_run_that_ends_while_nvccs_service_starts_leaves_no_service_behind(nvcc, tmp_path: Path):
    _, rundir, compilers = _run(tmp_path, "run-5")
    compilers.prepare_cuda()
    compilers.close()  # at once: the start under way is waited for and its service ended with the rest
    deadline = time.monotonic() + 3  # a start left running would bring its worker up within ~0.3 s
    while time.monotonic() < deadline:
        assert _workers_over(rundir.cuda_cache) == []
        time.sleep(0.05)
