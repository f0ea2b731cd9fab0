"""CUDA headers hipcc cannot find that were classed as plain compile errors or blocked a guard (seen in the
heldout16e group): cuComplex.h (every name of its API has a hip_complex.h spelling), and the parts of
cuda_runtime.h a file may include itself (device_atomic_functions.h, sm_32_intrinsics.h, ...), which have no
HIP file: HIP's runtime header declares what they do."""

from __future__ import annotations

from agent.proposers.rules import Workspace, propose_for
from tests.agent.rules.helpers import failure, image_toolchains, propose, validate

RNNT = """\
#include "core.h"

#include <stdio.h>
#include <algorithm>
#include <cuda_runtime_api.h>
#include <device_atomic_functions.h>
#include <device_launch_parameters.h>
#include <sm_32_intrinsics.h>

__global__ void count(unsigned int* counts, const float* x) {
  atomicAdd(&counts[blockIdx.x], __ldg(&x[threadIdx.x]) > 0.f ? 1u : 0u);
}

int launch(unsigned int* counts, const float* x) {
  count<<<1, 32>>>(counts, x);
  return (int)cudaGetLastError();
}
"""


def _rocm_branch(diff: str) -> str:
    return diff.split("+#ifdef USE_ROCM\n", 1)[1].split("+#else\n", 1)[0]


def test_cuda_internal_headers_are_guarded_with_their_block_and_the_unit_compiles(git_repo, rocm_image, nvcc):
    root = git_repo({"core.cu": RNNT, "core.h": "#pragma once\n"})
    fail = failure(
        "cuda_header", "core.cu", "cuda_runtime_api.h", "fatal error: 'cuda_runtime_api.h' file not found"
    )
    prop = propose(root, fail)
    assert _rocm_branch(prop.diff) == "+#include <hip/hip_runtime_api.h>\n+#include <hip/hip_runtime.h>\n"
    assert "+#include <device_atomic_functions.h>" not in prop.diff  # the CUDA lines only move into #else
    outcome = validate(root, image_toolchains(root, rocm_image, "gfx942"), prop, fail)
    assert outcome.kept, outcome.reason
    assert all(c.ok for c in outcome.checks), [c.detail for c in outcome.checks]


def test_the_internal_header_named_by_hipcc_takes_the_same_guard(git_repo):
    root = git_repo({"core.cu": RNNT.replace("#include <cuda_runtime_api.h>\n", "")})
    prop = propose(root, failure("cuda_header", "core.cu", "device_atomic_functions.h"))
    assert _rocm_branch(prop.diff) == "+#include <hip/hip_runtime.h>\n"


def test_a_repos_own_header_named_like_a_cuda_internal_one_stays_as_it_is(git_repo):
    src = '#include <cuda_runtime.h>\n#include "host_config.h"\n#include <cuda_fp16.h>\n\nint n() { return HOST_N; }\n'
    root = git_repo({"k.cu": src, "host_config.h": "#pragma once\n#define HOST_N 4\n"})
    prop = propose(root, failure("cuda_header", "k.cu", "cuda_runtime.h"))
    assert _rocm_branch(prop.diff) == (
        '+#include <hip/hip_runtime.h>\n+#include "host_config.h"\n+#include <hip/hip_fp16.h>\n'
    )


CUCOMPLEX_API = (
    *("cuCabs", "cuCabsf", "cuCadd", "cuCaddf", "cuCdiv", "cuCdivf", "cuCfma", "cuCfmaf", "cuCimag"),
    *("cuCimagf", "cuCmul", "cuCmulf", "cuComplexDoubleToFloat", "cuComplexFloatToDouble", "cuConj"),
    *("cuConjf", "cuCreal", "cuCrealf", "cuCsub", "cuCsubf", "make_cuComplex", "make_cuDoubleComplex"),
    "make_cuFloatComplex",
)
"""Every function of CUDA 13's cuComplex.h (its types are used below too)."""
HEADER = """\
#ifndef PRECISION_H
#define PRECISION_H
#include <cuComplex.h>
#define rpart(x) (cuCreal(x))
#define cmplx(x, y) (make_cuDoubleComplex(x, y))
#endif
"""
UNIT = """\
#include <cuComplex.h>
#include "precision.h"

__global__ void every_name(cuFloatComplex* f, cuDoubleComplex* d, cuComplex* c, float* out) {
  cuFloatComplex a = make_cuFloatComplex(1.f, 2.f), b = make_cuComplex(3.f, 4.f);
  cuDoubleComplex p = make_cuDoubleComplex(1., 2.), q = cmplx(rpart(p), 1.);
  f[0] = cuCfmaf(cuCaddf(a, b), cuCsubf(a, b), cuCdivf(cuCmulf(a, b), cuConjf(b)));
  d[0] = cuCfma(cuCadd(p, q), cuCsub(p, q), cuCdiv(cuCmul(p, q), cuConj(q)));
  c[0] = cuComplexDoubleToFloat(d[0]);
  d[1] = cuComplexFloatToDouble(c[0]);
  out[0] = cuCabsf(a) + cuCrealf(b) + cuCimagf(b) + (float)(cuCabs(p) + cuCreal(q) + cuCimag(q));
}
"""


def test_cucomplex_maps_every_api_name_and_a_header_s_macros_get_their_own_aliases(
    git_repo, rocm_image, nvcc
):
    assert all(name in UNIT + HEADER for name in CUCOMPLEX_API)
    root = git_repo({"src/unit.cu": UNIT, "src/precision.h": HEADER})
    fail = failure("cuda_header", "src/unit.cu", "cuComplex.h", "fatal error: 'cuComplex.h' file not found")
    prop = propose(root, fail)
    for name in CUCOMPLEX_API:
        hip = name.replace("make_cu", "make_hip") if name.startswith("make_") else "hip" + name[2:]
        assert f"+#define {name} {hip}\n" in prop.diff, name
    outcome = validate(root, image_toolchains(root, rocm_image, "gfx942"), prop, fail)
    assert outcome.kept, outcome.reason
    # the header, whose includer now defines the aliases under USE_ROCM, still gets its own: another
    # includer of it may define none
    header = failure("cuda_header", "src/precision.h", "cuComplex.h")
    header.facts["unit"] = "src/unit.cu"
    prop2 = propose(root, header)
    assert "+#define cuCreal hipCreal\n" in prop2.diff and "+#define make_cuDoubleComplex" in prop2.diff
    outcome2 = validate(root, image_toolchains(root, rocm_image, "gfx942"), prop2, header)
    assert outcome2.kept, outcome2.reason
    assert not propose_for(header, Workspace(root=root)).proposals  # a second run adds nothing
