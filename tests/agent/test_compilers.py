"""The run's compile services: nvcc's cache outlives the run, so a CUDA build of the final tree reuses it."""

from __future__ import annotations

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
