"""A helper whose `__host__ __device__` sits behind `#ifdef __CUDACC__` (directly, or through a qualifier macro
defined so) is host-only under hipcc, which defines `__HIPCC__`: a kernel calling it fails with "call to
__host__ function from __global__ function" (deepwave's dw_grid_index). The file's `__CUDACC__` tests widen."""

from __future__ import annotations

from agent.proposers.rules import Workspace, propose_for
from sandboxes.docker import DockerSandbox
from tests.agent.rules.helpers import image_toolchains, validate
from tools.diagnose import diagnose_text

GUARDED_RUNTIME = "#ifdef USE_ROCM\n#include <hip/hip_runtime.h>\n#else\n#include <cuda_runtime.h>\n#endif\n"
NATIVE = """\
#ifndef NATIVE_TYPES_H
#define NATIVE_TYPES_H
#include <stdint.h>

#ifdef __CUDACC__
__host__ __device__
#endif
    static inline int64_t grid_index(unsigned int block, unsigned int size, unsigned int thread) {
  return (int64_t)block * size + thread;
}
#endif
"""
DEFS = "#pragma once\n#ifdef __CUDACC__\n#define HD __host__ __device__\n#else\n#define HD\n#endif\n"
MATH = '#pragma once\n#include "defs.h"\n\nHD inline float squared(float x) { return x * x; }\n'


def _first_failure(root, image: str, unit: str):
    with DockerSandbox(image, str(root)) as box:
        out = box.run(
            f"hipcc -x hip -DUSE_ROCM --offload-arch=gfx942 -I. -c {unit} -o /tmp/u.o", cwd=str(root)
        )
    assert not out.ok
    return diagnose_text(out.output, repo_root=root, source="hipcc")[0]


def _prove(root, image: str, unit: str, fixed: str) -> None:
    fail = _first_failure(root, image, unit)
    result = propose_for(fail, Workspace(root=root))
    (prop,) = result.proposals
    assert prop.files == [fixed] and "+#if defined(__CUDACC__) || defined(__HIPCC__)\n" in prop.diff
    outcome = validate(root, image_toolchains(root, image, "gfx942"), prop, fail)
    assert outcome.kept, outcome.reason
    assert all(c.ok for c in outcome.checks), [c.detail for c in outcome.checks]


def test_a_qualifier_behind_cudacc_right_above_the_helper_is_widened(git_repo, rocm_image, nvcc):
    kernel = (
        GUARDED_RUNTIME
        + '#include "native_types.h"\n\n__global__ void k(int64_t* x) { x[0] = grid_index(blockIdx.x, blockDim.x, '
        "threadIdx.x); }\n"
    )
    root = git_repo({"native_types.h": NATIVE, "k.cu": kernel})
    _prove(root, rocm_image, "k.cu", "native_types.h")


def test_a_qualifier_macro_defined_behind_cudacc_in_an_included_header_is_widened(git_repo, rocm_image, nvcc):
    kernel = (
        GUARDED_RUNTIME + '#include "sqmath.h"\n\n__global__ void k(float* x) { x[0] = squared(x[1]); }\n'
    )
    root = git_repo({"defs.h": DEFS, "sqmath.h": MATH, "k.cu": kernel})
    _prove(root, rocm_image, "k.cu", "defs.h")
