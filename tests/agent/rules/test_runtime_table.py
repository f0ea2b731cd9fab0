"""The runtime-name table against the real headers, both ways: every CUDA runtime name whose `hip` twin the
image's HIP runtime declares is mapped to it (cudaErrorUnknown was declined as having "no known HIP runtime
counterpart" while hipcc itself suggested hipErrorUnknown), and every HIP name the table uses is declared."""

from __future__ import annotations

import re
import subprocess

from agent.proposers.rules.runtime_names import LAUNCH_EX_NAMES, RUNTIME
from tests.agent.rules.helpers import failure, image_toolchains, propose, validate


def declared(preprocessed: str, macros: str, prefix: str) -> set[str]:
    """Names a header set declares (functions, enum/struct/union tags, enumerators, typedefs, macros), read from
    its preprocessor output, where comments are gone, and its `-dM` macro list."""
    word = rf"({prefix}[A-Z]\w*)"
    names = set(re.findall(rf"^#define\s+{word}", macros, re.MULTILINE))
    for body in re.findall(r"\benum\b[^{;]*\{([^}]*)\}", preprocessed):
        names |= set(re.findall(rf"\b{word}\s*(?:=|,|$)", body.strip() + ",", re.MULTILINE))
    names |= set(
        re.findall(rf"\b(?:struct|enum|union|class)\s+(?:__attribute__\(\([^)]*\)\)\s*)*{word}", preprocessed)
    )
    for typedef in re.findall(r"\btypedef\b([^;]*);", preprocessed):
        names |= set(re.findall(rf"\b{word}\s*(?:\[[^\]]*\])?\s*$", typedef.strip()))
        names |= set(re.findall(rf"\(\s*\*\s*{word}\s*\)", typedef))
    names |= set(re.findall(rf"\}}\s*{word}\s*[;,]", preprocessed))  # typedef struct {...} name;
    names |= set(re.findall(rf"\b{word}\s*\(", preprocessed))
    return names


def _hip_declared(tmp_path, image: str) -> set[str]:
    from sandboxes.docker import DockerSandbox

    (tmp_path / "probe.cpp").write_text("#include <hip/hip_runtime.h>\n")
    with DockerSandbox(image, str(tmp_path)) as box:
        pre = box.run("hipcc -x hip --cuda-host-only -E probe.cpp", cwd=str(tmp_path))
        dm = box.run("hipcc -x hip --cuda-host-only -E -dM probe.cpp", cwd=str(tmp_path))
    assert pre.ok and dm.ok, (pre.stderr + dm.stderr)[-2000:]
    return declared(pre.stdout, dm.stdout, "hip")


def _cuda_declared(tmp_path) -> set[str]:
    (tmp_path / "probe.cu").write_text("#include <cuda_runtime.h>\n#include <cuda_profiler_api.h>\n")

    def nvcc(*flags: str) -> str:
        done = subprocess.run(
            ["nvcc", "-x", "cu", "-std=c++17", "-E", *flags, "probe.cu"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout

    return declared(nvcc(), nvcc("-Xcompiler", "-dM"), "cuda")


def test_every_cuda_runtime_name_with_a_hip_twin_is_mapped_to_it(tmp_path, rocm_image, nvcc):
    hip, cuda = _hip_declared(tmp_path, rocm_image), _cuda_declared(tmp_path)
    assert {"cudaErrorUnknown", "cudaMemcpyAsync", "cudaStream_t"} <= cuda and "hipErrorUnknown" in hip
    # cudaLaunchAttribute*: the cudaLaunchKernelEx shim defines CUDA's own enum (HIP's would clash with it)
    twins = {c for c in cuda if "hip" + c[4:] in hip and not c.startswith("cudaLaunchAttribute")}
    twins -= set(LAUNCH_EX_NAMES)
    assert len(twins) > 600
    assert not sorted(twins - set(RUNTIME)), "twins missing from the table"
    assert all(RUNTIME[c] == "hip" + c[4:] for c in twins)
    assert (
        "hipDeviceProp" not in hip and RUNTIME["cudaDeviceProp"] == "hipDeviceProp_t"
    )  # not a twin: renamed
    attrs = {c for c in cuda if c.startswith("cudaDevAttr") and "hipDeviceAttribute" + c[11:] in hip}
    assert len(attrs) > 50 and all(RUNTIME.get(c) == "hipDeviceAttribute" + c[11:] for c in attrs)
    assert not sorted(set(RUNTIME.values()) - hip), "HIP names the image does not declare"
    assert not sorted(set(RUNTIME) - cuda), "CUDA names CUDA does not declare"


CHECKS = """\
#pragma once
#include <cuda_runtime.h>
#include <stdexcept>

inline void check(cudaError_t err) {
  switch (err) {
    case cudaSuccess: return;
    case cudaErrorInvalidDevice: throw std::runtime_error("invalid device");
    case cudaErrorIllegalAddress: throw std::runtime_error("illegal address");
    case cudaErrorLaunchOutOfResources: throw std::runtime_error("out of resources");
    default: throw std::runtime_error(cudaGetErrorString(cudaErrorUnknown));
  }
}

inline int cores() {
  int n = 0;
  check(cudaDeviceGetAttribute(&n, cudaDevAttrMaxRegistersPerBlock, 0));
  return n;
}
"""


def test_error_codes_past_the_old_table_map_and_the_unit_compiles(git_repo, rocm_image, nvcc):
    root = git_repo({"common_gpu.h": CHECKS, "k.cu": '#include "common_gpu.h"\n__global__ void k() {}\n'})
    subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "x"], cwd=root, check=True)
    header = failure("cuda_header", "common_gpu.h", "cuda_runtime.h")
    header.facts["unit"] = "k.cu"
    subprocess.run(["git", "apply", "-"], input=propose(root, header).diff, text=True, cwd=root, check=True)
    fail = failure(
        "cuda_api", "common_gpu.h", "cudaErrorUnknown", "use of undeclared identifier 'cudaErrorUnknown'"
    )
    fail.facts["unit"] = "k.cu"
    prop = propose(root, fail)
    for name in ("cudaErrorUnknown", "cudaErrorIllegalAddress", "cudaErrorLaunchOutOfResources"):
        assert f"+#define {name} hip{name[4:]}\n" in prop.diff
    assert "+#define cudaDevAttrMaxRegistersPerBlock hipDeviceAttributeMaxRegistersPerBlock\n" in prop.diff
    outcome = validate(root, image_toolchains(root, rocm_image, "gfx942"), prop, fail)
    assert outcome.kept, outcome.reason
