"""`#include <cuda.h>` (the driver API): mapped to the HIP runtime plus one alias per driver name in use
when HIP has every one of them, declined by name otherwise."""

from __future__ import annotations

import re

from agent.proposers.rules import Workspace, propose_for
from agent.proposers.rules.driver_api import DRIVER
from tests.agent.rules.helpers import declines, failure, image_toolchains, propose, validate

LAUNCH_H = """\
#pragma once
#include <cuda.h>

#define DRV_OK(call) ((call) == CUDA_SUCCESS)
"""
LAUNCH_CU = """\
#include "launch.h"

__global__ void fill(float* x, float v) { x[threadIdx.x] = v; }

bool launch(CUfunction fn, CUdeviceptr buf, float v, CUstream s) {
  void* args[] = {&buf, &v};
  return DRV_OK(cuLaunchKernel(fn, 1, 1, 1, 64, 1, 1, 0, s, args, nullptr)) && DRV_OK(cuStreamSynchronize(s));
}

bool alloc(CUdeviceptr* buf, size_t n) { return DRV_OK(cuMemAlloc(buf, n)); }
"""


def _fail(file: str = "launch.h"):
    fail = failure("cuda_header", file, "cuda.h", "fatal error: 'cuda.h' file not found")
    fail.facts["unit"] = "launch.cu"
    return fail


def test_driver_names_used_anywhere_in_the_unit_are_aliased_and_it_compiles(git_repo, rocm_image, nvcc):
    root = git_repo({"launch.h": LAUNCH_H, "launch.cu": LAUNCH_CU})
    fail = _fail()
    prop = propose(root, fail)
    for name in ("CUDA_SUCCESS", "CUdeviceptr", "CUfunction", "CUstream", "cuLaunchKernel", "cuMemAlloc"):
        assert (
            f"+#define {name} {DRIVER[name]}\n" in prop.diff
        )  # the .cu's names, through the header's include
    outcome = validate(root, image_toolchains(root, rocm_image, "gfx942"), prop, fail)
    assert outcome.kept, outcome.reason
    assert all(c.ok for c in outcome.checks), [c.detail for c in outcome.checks]  # hipcc, nvcc, CUDA -E
    assert not propose_for(fail, Workspace(root=root)).proposals  # a second run adds nothing


def test_a_driver_facility_hip_lacks_is_declined_by_name(git_repo):
    tma = LAUNCH_CU + "CUresult make(CUtensorMap* m) { return cuTensorMapEncodeTiled(m, {}); }\n"
    root = git_repo({"launch.h": LAUNCH_H, "launch.cu": tma})
    (why,) = declines(root, _fail())
    assert "CUtensorMap, cuTensorMapEncodeTiled" in why and "TMA" in why


def test_every_hip_spelling_of_the_driver_and_runtime_tables_is_declared_by_the_images_hip_runtime(
    tmp_path, rocm_image
):
    """A mapped name HIP lacks turns one undeclared name into another (cudaDeviceProp -> hipDeviceProp was
    one: HIP's type is hipDeviceProp_t)."""
    from agent.proposers.rules.runtime_names import RUNTIME
    from sandboxes.docker import DockerSandbox

    (tmp_path / "probe.cpp").write_text("#include <hip/hip_runtime.h>\n")
    with DockerSandbox(rocm_image, str(tmp_path)) as box:
        out = box.run("hipcc -x hip -E -dD --cuda-host-only probe.cpp", cwd=str(tmp_path))
    assert out.ok, out.stderr[-2000:]
    declared = set(re.findall(r"\b(hip\w+)", out.stdout))
    assert not sorted(set(DRIVER.values()) - declared)
    assert not sorted(set(RUNTIME.values()) - declared)
