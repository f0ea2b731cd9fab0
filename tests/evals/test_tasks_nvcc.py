"""The CUDA build of every task's faulty kernels, and of its reference fix, stays green with nvcc.

The builds go through one compile cache for the module (rocport's own: sandboxes/compile_service.py's
spool, keyed by the unit's preprocessed input and command), as a CUDA CI's ccache would: two tasks
that inject the same fault (cub_rmsnorm and rules_and_llm_mixed share rmsnorm's) compile that unit
once, and the repeat is answered from the cache (the cub unit costs ~9 s of nvcc each time). The
module-scoped cache also keeps these tests on one xdist worker, in name order (tests/parallel.py)."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from evals.taskdefs import materialize
from sandboxes.compile_service import write_spool
from sandboxes.local import HOST_PYTHON
from tests.evals.test_tasks import FULL_BUILD, TASKS, failing_units, with_reference_fix

pytestmark = pytest.mark.timeout(900)
NVCC_TASKS = sorted(name for name, task in TASKS.items() if failing_units(task) and name not in FULL_BUILD)


@pytest.fixture(scope="module")
def cached_build(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The shell words that route a build's compiles through the module's cache."""
    return write_spool(tmp_path_factory.mktemp("nvcc-spool") / "spool", HOST_PYTHON)


@pytest.mark.nvcc
@pytest.mark.parametrize("name", NVCC_TASKS)
def test_faulty_and_reference_fixed_kernels_build_with_nvcc(
    name: str, nvcc, cached_build: str, tmp_path: Path
):
    """One test per task: its faulty kernels and, when it has one, its reference fix build with nvcc."""
    task = TASKS[name]
    units = failing_units(task)
    repos = [materialize(task, tmp_path / task.name)]
    if task.reference_fix:
        repos.append(with_reference_fix(task, materialize(task, tmp_path / f"{task.name}-fixed")))
    build = f"{cached_build}{shlex.quote(sys.executable)} build.py --backend cuda --units {' '.join(units)}"
    for repo in repos:
        proc = subprocess.run(
            ["bash", "-c", build],
            cwd=repo,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert proc.returncode == 0, f"{repo.name}: the CUDA build broke:\n{proc.stdout[-2000:]}"


def test_the_nvcc_builds_cover_every_task_with_kernel_faults():
    assert len(NVCC_TASKS) >= 5, NVCC_TASKS
