"""Preflight and --until: a port on an image that lacks what the framework's build needs stops before
any build, with a table that names what is missing, which image has it and what still runs; --until
stops a run at the stage asked for, and the report says what ran and what was skipped."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from agent.loop.preflight import evaluate, parse_probe
from agent.profiles import load_profile
from tests.agent.portfixture import HEADER_FAULTS, make_job

ROCPORT = [sys.executable, "-c", "from agent.cli import main; main()"]

SGLANG_TREE = {
    "sgl-kernel/csrc/activation.cu": "#include <cuda_runtime.h>\n__global__ void k(float* x) {\n"
    "  x[0] = __shfl_xor_sync(0xffffffff, x[0], 1);\n}\n",
    "python/sglang/__init__.py": "",
}


@pytest.fixture
def home(tmp_path):
    return tmp_path / "home"


def _port(home, *args, timeout=300):
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "COLUMNS")}
    env["ROCPORT_HOME"] = str(home)
    return subprocess.run(
        [*ROCPORT, "port", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def test_debian_python_without_torch_is_named_with_the_image_that_has_it():
    facts = parse_probe(
        "hipcc=yes\npython3=3.13\npip=yes\npip_install=no\ntorch=no (ModuleNotFoundError)\n"
        "mod:setuptools=yes\nmod:wheel=yes\ntool:ninja=no\n"
    )
    pre = evaluate(load_profile("sglang"), "rocport/rocm-build:6.4", facts)
    missing = {c.need: c.found for c in pre.missing}
    assert missing == {
        "pip install into the image's python": "externally-managed system python, no venv",
        "ROCm PyTorch": "not installed",
        "ninja": "not installed",
    }
    verdict = pre.verdict()
    assert "target.image=lmsysorg/sglang:latest-rocm" in verdict
    assert (
        "still possible here: scan" in verdict and "unit compiles" not in verdict
    )  # sglang units need torch


def test_a_cuda_torch_is_not_a_rocm_torch_and_hipcc_alone_serves_the_fixture():
    cuda = evaluate(
        load_profile("vllm"),
        "img",
        parse_probe("hipcc=yes\npython3=3.12\npip=yes\npip_install=yes\ntorch=2.5.0 hip=None\n"),
    )
    assert [c.found for c in cuda.missing if c.need == "ROCm PyTorch"] == ["CUDA/CPU build: 2.5.0 hip=None"]
    fixture = evaluate(load_profile("tinyserve"), "img", parse_probe("hipcc=yes\npython3=3.13\n"))
    assert fixture.ready and "hipcc" in fixture.verdict()


def test_the_unit_stage_compiles_what_the_rocm_build_lists_not_every_cuda_file(tmp_path):
    """sglang: the units are the sources setup_rocm.py hands its extension, not sgl-kernel/csrc/**/*.cu."""
    from agent.loop.nodes.units import rocm_units

    for rel, text in {
        "sgl-kernel/setup_rocm.py": 'sources = ["csrc/allreduce/custom_all_reduce.hip", "csrc/moe/moe_align.cu"]\n',
        "sgl-kernel/csrc/allreduce/custom_all_reduce.hip": "",
        "sgl-kernel/csrc/moe/moe_align.cu": "",
        "sgl-kernel/csrc/gemm/fp8_blockwise_cutlass.cu": "",  # CUDA-only: not in the ROCm build
    }.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    units, source = rocm_units(tmp_path, load_profile("sglang"))
    assert units == ["sgl-kernel/csrc/allreduce/custom_all_reduce.hip", "sgl-kernel/csrc/moe/moe_align.cu"]
    assert source == "sources of sgl-kernel/setup_rocm.py"


def test_real_sglang_profile_on_the_local_image_stops_at_preflight_with_its_table(
    home, tmp_path, git_repo, rocm_image
):
    repo = git_repo(SGLANG_TREE)
    started = time.monotonic()
    out = _port(
        home,
        "-c",
        "framework.profile=sglang",
        "-c",
        f"framework.repo={repo}",
        "-c",
        "target.arch=gfx942",
        "-c",
        f"target.image={rocm_image}",
        "-c",
        "strategy=rules",
    )
    print(f"sglang port on {rocm_image} stopped after {time.monotonic() - started:.1f}s")
    assert out.returncode == 1, out.stderr[-3000:]
    err = out.stderr
    assert "lacks" in err and "ROCm PyTorch" in err and "target.image=lmsysorg/sglang:latest-rocm" in err
    assert "externally-managed" in err and "unknown" not in err
    table = [ln for ln in err.splitlines() if ln.startswith("│")]
    rows = {ln.split("│")[1].strip(): ln.split("│")[2].strip() for ln in table}
    assert rows["scan"] == "ran" and rows["preflight"] == "ran" and rows["build"] == "skipped"
    assert all(ln.split("│")[1].strip() for ln in table)  # no continuation lines: nothing wrapped in a log
    run_id = err.split("run id: ")[1].split()[0]
    state = json.loads((home / "runs" / run_id / "state.json").read_text())
    assert state["counters"]["builds"] == 0 and state["status"] == "partial"
    report = (home / "runs" / run_id / "report.md").read_text()
    assert "### Preflight of" in report and "| ROCm PyTorch | **NO** |" in report
    assert "## Static scan (1 finding(s))" in report and "warp_intrinsic" in report


def test_until_scan_stops_before_any_build_and_the_report_says_why(home, tmp_path, git_repo):
    repo = git_repo(HEADER_FAULTS)
    args = [a for s in make_job(tmp_path, repo) for a in ("-c", s)]
    out = _port(home, *args, "--until", "scan")
    assert out.returncode == 0, out.stderr[-3000:]
    assert "green up to scan" in out.stderr
    run_id = out.stderr.split("run id: ")[1].split()[0]
    report = (home / "runs" / run_id / "report.md").read_text()
    assert "| build | skipped | green up to scan, stopped there as asked (--until scan) |" in report
    assert "| scan | ran | 2 finding(s)" in report


def test_until_rejects_a_stage_it_does_not_know(home):
    out = _port(home, "-c", "framework.profile=tinyserve", "--until", "deploy")
    assert out.returncode == 2 and out.stderr.count("\n") == 1
    assert "--until deploy: use one of scan, unit, build, load, serve, bench" in out.stderr


def test_until_unit_compiles_every_rocm_unit_in_the_image_and_tables_each_first_error(
    home, tmp_path, git_repo, rocm_image
):
    """`--until unit` on an image whose python refuses `pip install` (the full build cannot run there):
    hipcc still compiles each unit of the build for the target, and the run stops with a table."""
    from tests.agent.portfixture import FILES, PROFILE

    repo = git_repo({**FILES, "csrc/axpy.cu": AXPY})
    profile = tmp_path / "pipbuilt.yaml"
    profile.write_text(
        PROFILE.replace("rocm: bash build.sh {arch}", "rocm: pip install . && bash build.sh {arch}")
    )
    started = time.monotonic()
    out = _port(
        home,
        *("-c", f"framework.profile={profile}", "-c", f"framework.repo={repo}", "-c", "target.arch=gfx942"),
        *("-c", f"target.image={rocm_image}", "-c", "strategy=rules", "--until", "unit"),
        timeout=600,
    )
    print(f"--until unit: 3 units on {rocm_image} in {time.monotonic() - started:.1f}s")
    assert out.returncode == 1, out.stderr[-3000:]
    err = out.stderr
    rows = {
        ln.split("│")[1].strip(): [c.strip() for c in ln.split("│")[2:-1]]
        for ln in err.splitlines()
        if ln.startswith("│")
    }
    assert rows["csrc/axpy.cu"][0] == "compiles"
    assert rows["csrc/scale.cu"][0] == "FAILS" and "csrc/scale.cu:1" in rows["csrc/scale.cu"][2]
    assert "'cuda_runtime.h' file not found" in rows["csrc/warp_reduce.cu"][2]
    assert rows["unit compiles"] == [
        "ran",
        "failed: 1 of 3 compile with hipcc for gfx942 (the profile's unit sources csrc/*.cu)",
    ]
    assert (
        rows["build"] == ["skipped", "stopped there as asked (--until unit)"]
        and rows["preflight"][0] == "ran"
    )
    run_id = err.split("run id: ")[1].split()[0]
    state = json.loads((home / "runs" / run_id / "state.json").read_text())
    assert state["counters"]["builds"] == 0 and state["counters"]["unit_compiles"] == 3
    events = [json.loads(ln) for ln in (home / "runs" / run_id / "events.jsonl").read_text().splitlines()]
    [cache] = [e for e in events if e["event"] == "compile_cache"]
    assert cache["compile_requests"] == 3  # all through the warm compile service, none a command of its own
    assert state["stop_reason"] == (
        "unit compiles: 1 of 3 compile with hipcc for gfx942 (the profile's unit sources csrc/*.cu); "
        "stopped there as asked (--until unit)"
    )
    report = (home / "runs" / run_id / "report.md").read_text()
    assert "### Unit compiles (1 of 3 compile" in report and "| csrc/axpy.cu | compiles |" in report
    assert "| pip install into the image's python | **NO** |" in report
    html = (home / "runs" / run_id / "report.html").read_text()
    assert '<table id="units">' in html and "FAILS" in html


AXPY = (
    "#include <hip/hip_runtime.h>\n"
    "__global__ void axpy(float a, const float* x, float* y) { y[threadIdx.x] += a * x[threadIdx.x]; }\n"
)
