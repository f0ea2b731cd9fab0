"""A stored compile whose warnings name lines a guard moved is reused with the warnings' numbers moved,
as the compiler itself would print them now (real nvcc: its front end's `file(3)` and `at line 6` forms)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from sandboxes.compile_service import CompileService
from sandboxes.local import LocalSandbox

KERNEL = """template <typename T>
__device__ unsigned char narrow(T k) {
  const unsigned char r{k};
  return r;
}
__global__ void kern(int* out, int k) { out[0] = narrow(k); }
"""
GUARD = "#ifdef USE_ROCM\n#include <hip/hip_runtime.h>\n#endif\n"
NVCC = "nvcc -arch=sm_90 -O2 -c k.cu -o {out}"


def test_nvcc_warnings_follow_a_guard_that_moved_their_lines(nvcc, tmp_path: Path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "k.cu").write_text(KERNEL)
    with LocalSandbox(repo) as box:
        service = CompileService.start(box)
        try:
            first = service.run(NVCC.format(out=tmp_path / "k.o"))
            assert first.ok and "k.cu(3): warning" in first.output and "at line 6" in first.output
            (repo / "k.cu").write_text(GUARD + KERNEL)
            moved = service.run(NVCC.format(out=tmp_path / "moved.o"))
            ledger = [line.split("\t")[0] for line in (service.cache_dir / "ledger").read_text().splitlines()]
        finally:
            service.close()
    fresh = subprocess.run(
        NVCC.format(out=tmp_path / "fresh.o").split(), cwd=repo, capture_output=True, text=True
    )
    assert ledger == ["miss", "lines moved"]
    assert moved.ok and "k.cu(6): warning" in moved.output and "at line 9" in moved.output
    assert moved.output == fresh.stdout + fresh.stderr
