"""The eval's CUDA scoring builds share one compile cache per strategy: a later task's build compiles
only what differs, and a run that asked an LLM adds nothing to it (real nvcc, real builds)."""

from pathlib import Path

from agent.loop.compilers import Compilers
from agent.loop.rundir import RunDir
from evals.runner import Scoring

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
