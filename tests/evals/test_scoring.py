"""The eval's CUDA scoring builds share one compile cache per strategy: a later task's build compiles
only what differs, and a run that asked an LLM adds nothing to it; strategies side by side start from
one CUDA build of each starting tree (real nvcc, real builds)."""

from pathlib import Path

from agent.loop.compilers import Compilers
from agent.loop.rundir import RunDir
from evals.scoring import Scoring, baselines, cuda_build, scoring_cache
from evals.taskdefs import load_task, materialize

KERNEL = "__global__ void twice(float* x) { x[threadIdx.x] *= 2.0f; }\n"
K = "nvcc -arch=sm_90 -O2 -c k.cu -o k.o"
BUILD = K + " && nvcc -arch=sm_90 -O2 -c other.cu -o other.o"


def _task_tree(root: Path, other: str = "") -> Path:
    """One task's final tree: the shared kernel and a unit the task changed."""
    root.mkdir(parents=True)
    (root / "k.cu").write_text(KERNEL)
    (root / "other.cu").write_text(f"__global__ void other(int* x) {{ x[0] = 1; }}\n{other}")
    return root


def test_a_later_task_compiles_only_the_units_it_changed(nvcc, tmp_path: Path):
    scoring = Scoring(tmp_path / "scoring")
    assert scoring.build(_task_tree(tmp_path / "task-1" / "repo"), BUILD, 600, None, trusted=True)
    assert scoring.ledger == ["miss", "miss"]
    second = _task_tree(tmp_path / "task-2" / "repo", other="// the task's own change\n")
    assert scoring.build(second, BUILD, 600, None, trusted=True)
    assert scoring.ledger[2:] == ["direct", "miss"]  # k.cu from the first task's build; other.cu is new
    assert (second / "k.o").read_bytes() == (tmp_path / "task-1" / "repo" / "k.o").read_bytes()
    assert not (second.parent / "cuda-scoring-spool").exists()  # each build's copy is gone after it


def test_a_build_after_a_run_that_asked_an_llm_adds_nothing(nvcc, tmp_path: Path):
    scoring = Scoring(tmp_path / "scoring")
    assert scoring.build(_task_tree(tmp_path / "llm-task" / "repo"), K, 600, None, trusted=False)
    assert scoring.build(_task_tree(tmp_path / "next-task" / "repo"), K, 600, None, trusted=True)
    assert scoring.ledger == ["miss", "miss"]


def test_a_failing_build_is_scored_failed_and_its_good_units_kept(nvcc, tmp_path: Path):
    scoring = Scoring(tmp_path / "scoring")
    broken = _task_tree(tmp_path / "broken" / "repo", other="this is not CUDA\n")
    assert not scoring.build(broken, BUILD.replace(" && ", "; "), 600, None, trusted=True)
    assert scoring.build(_task_tree(tmp_path / "fixed" / "repo"), K, 600, None, trusted=True)
    assert scoring.ledger == ["miss", "miss", "direct"]


def test_the_runs_own_cuda_checks_are_reused(nvcc, tmp_path: Path):
    repo = _task_tree(tmp_path / "task" / "repo")
    rundir = RunDir("run-1", home=tmp_path / "home")
    rundir.create("{}")
    compilers = Compilers(repo=repo, rundir=rundir)
    assert compilers.cuda is not None and compilers.cuda.run("nvcc -arch=sm_90 -O2 -c k.cu -o check.o").ok
    compilers.close()
    scoring = Scoring(tmp_path / "scoring")
    assert scoring.build(repo, K, 600, rundir.cuda_cache, trusted=True)
    assert scoring.ledger == ["direct"]


def test_a_port_that_only_guards_cuda_lines_is_scored_from_the_starting_trees_build(nvcc, tmp_path: Path):
    """Strategies side by side: the task's starting tree is built with CUDA once (Baselines), and a
    strategy's scoring build of a tree whose CUDA side only moved (a ROCm branch added around the CUDA
    headers) compiles nothing; nothing a strategy's build does reaches the starting trees' cache."""
    task = load_task("cuda_header_activation")
    base = baselines(tmp_path / "eval")
    assert base.build(task, tmp_path / "eval") is True
    assert not (tmp_path / "eval" / f"{task.name}-cuda-baseline").exists()  # its copy is gone
    entries = sorted(p.name for p in (base.cache / "e").iterdir())
    assert entries
    assert base.build(task, tmp_path / "eval") is True and len(base.seconds) == 1  # once per task

    ported = materialize(task, tmp_path / "rules" / "repo")
    unit = ported / "csrc" / "activation.cu"
    unit.write_text(
        unit.read_text().replace(
            "#include <cuda_runtime.h>\n#include <cuda_bf16.h>\n",
            "#ifdef USE_ROCM\n#include <hip/hip_runtime.h>\n#include <hip/hip_bf16.h>\n#else\n"
            "#include <cuda_runtime.h>\n#include <cuda_bf16.h>\n#endif\n",
        )
    )
    scoring = scoring_cache(tmp_path / "eval", "rules", over_baseline=True)
    assert cuda_build(task, ported, scoring=scoring, trusted=False)
    assert scoring.ledger and "miss" not in scoring.ledger, scoring.ledger
    assert sorted(p.name for p in (base.cache / "e").iterdir()) == entries

    broken = materialize(task, tmp_path / "naive" / "repo")  # a unit the starting tree's build never saw
    (broken / "csrc" / "activation.cu").write_text("this is not CUDA\n")
    assert (
        cuda_build(
            task, broken, scoring=scoring_cache(tmp_path / "eval", "naive", over_baseline=True), trusted=True
        )
        is False
    )
