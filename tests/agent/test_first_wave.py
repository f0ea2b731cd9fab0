"""The first wave: units the scan flags are compiled alone before the first full build (real hipcc, git)."""

from __future__ import annotations

import json

import pytest

from agent.config import load_job
from agent.loop.port import start_port
from tests.agent.portfixture import BUILD_SH, make_job

ROCM_INCLUDE = "#ifdef USE_ROCM\n#include <hip/hip_runtime.h>\n#endif\n"

# Hopper PTX with no ROCm form: the scan flags it, hipcc rejects it, every rule declines it.
WGMMA = (
    ROCM_INCLUDE
    + """
__global__ void fence(float* out) {
  asm volatile("wgmma.fence.sync.aligned;\\n" ::: "memory");
  out[threadIdx.x] = 1.0f;
}
"""
)

# A lane index from a 32 literal: the scan flags it, yet it compiles for ROCm (a runtime question only).
LANE = (
    ROCM_INCLUDE
    + """
__global__ void lane_of(int* out) {
  const int lane = threadIdx.x % 32;
  out[threadIdx.x] = lane;
}
"""
)

HEALTHY = (
    ROCM_INCLUDE
    + """
__global__ void fill(float* out, float v) { out[threadIdx.x] = v; }
"""
)


@pytest.fixture
def home(tmp_path, monkeypatch):
    path = tmp_path / "home"
    monkeypatch.setenv("ROCPORT_HOME", str(path))
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    return path


def _events(result, *names: str) -> list[dict]:
    return [e for e in result.events if e["event"] in names]


def test_a_flagged_unit_nothing_can_fix_still_gets_the_full_build(home, tmp_path, git_repo, hipcc, nvcc):
    """Nothing proposed before the first build must not end the run there: the full build runs and
    reports every failing unit, then the run stops on what no rule fixes."""
    repo = git_repo({"csrc/fence.cu": WGMMA, "csrc/fill.cu": HEALTHY, "build.sh": BUILD_SH})
    result = start_port(load_job(make_job(tmp_path, repo)))
    assert result.status == "partial"
    assert result.reason.startswith("no fix proposed"), result.reason
    assert result.counters["builds"] == 1 and result.counters["unit_compiles"] == 1
    order = [(e["event"], e.get("unit")) for e in _events(result, "unit_compiled", "build_started")]
    assert order == [("unit_compiled", "csrc/fence.cu"), ("build_started", None)]
    state = json.loads((home / "runs" / result.run_id / "state.json").read_text())
    assert state["stages"]["build"]["status"] == "failed"
    assert [u["kind"] for u in state["unfixable"]] == ["inline_ptx"]  # asked once, not again after the build


def test_a_flagged_unit_that_compiles_goes_straight_to_the_build(home, tmp_path, git_repo, hipcc, nvcc):
    repo = git_repo({"csrc/lane.cu": LANE, "csrc/fill.cu": HEALTHY, "build.sh": BUILD_SH})
    result = start_port(load_job(make_job(tmp_path, repo)))
    assert result.status == "green", result.reason
    assert result.counters["builds"] == 1 and result.counters["unit_compiles"] == 1
    compiled = _events(result, "unit_compiled")
    assert [(e["unit"], e["ok"]) for e in compiled] == [("csrc/lane.cu", True)]
    # the build's other unit is compiled ahead of it on the idle core, never counted as a unit check
    assert "compiling the build's other 1 unit(s) on idle cores" in [e.get("message") for e in result.events]
    assert not _events(result, "proposed", "patch_kept")  # no compiler error, so nothing to patch


def test_the_naive_baseline_builds_first(home, tmp_path, git_repo, hipcc, nvcc):
    repo = git_repo({"csrc/lane.cu": LANE, "build.sh": BUILD_SH})
    result = start_port(load_job(make_job(tmp_path, repo, "strategy=naive")))
    assert result.status == "green", result.reason
    assert result.counters["unit_compiles"] == 0 and not _events(result, "unit_compiled")
