"""cuda_header rule: real kernels with CUDA headers, fixed and proven with hipcc and nvcc."""

from __future__ import annotations

import pytest

from tests.agent.rules.helpers import declines, failure, host_toolchains, image_toolchains, propose, validate

KERNEL = """#include <cstdio>
#include <cuda_runtime.h>
#include <cuda_fp16.h>

__global__ void scale(__half* x, float s) { x[threadIdx.x] = __float2half(__half2float(x[threadIdx.x]) * s); }
"""
BF16 = """#ifdef USE_ROCM
#include <hip/hip_runtime.h>
#else
#include <cuda_runtime.h>
#endif
#include <cuda_bf16.h>

__global__ void k(float* x) { x[0] = __bfloat162float(__float2bfloat16(x[0])); }
"""


def test_guard_groups_consecutive_includes_and_keeps_cuda_lines(git_repo):
    root = git_repo({"csrc/k.cu": KERNEL})
    prop = propose(root, failure("cuda_header", "csrc/k.cu", "cuda_runtime.h"))
    assert prop.diff.count("#ifdef USE_ROCM") == 1
    assert "+#include <hip/hip_runtime.h>\n+#include <hip/hip_fp16.h>\n+#else\n" in prop.diff
    assert "-#include <cuda_runtime.h>" not in prop.diff  # the CUDA lines stay as they are


def test_fix_compiles_on_host_hipcc_and_is_proven_unchanged_for_cuda(git_repo, hipcc, nvcc):
    root = git_repo({"csrc/k.cu": KERNEL})
    fail = failure("cuda_header", "csrc/k.cu", "cuda_runtime.h")
    outcome = validate(root, host_toolchains(root), propose(root, fail, "gfx90a"), fail)
    assert outcome.kept, outcome.reason
    names = {c.name.split(" ")[0] + " " + c.name.split(" ")[1] for c in outcome.checks}
    assert {"hipcc gfx90a", "nvcc csrc/k.cu", "cuda identity"} <= names
    assert "#include <hip/hip_fp16.h>" in (root / "csrc/k.cu").read_text()
    assert not [p for p in [propose_none(root, fail)] if p]


def propose_none(root, fail):
    from agent.proposers.rules import Workspace, propose_for

    return propose_for(fail, Workspace(root=root)).proposals


def test_merges_into_existing_guard_and_compiles_for_gfx942_gfx950(git_repo, rocm_image, nvcc):
    root = git_repo({"csrc/bf.cu": BF16})
    fail = failure("cuda_header", "csrc/bf.cu", "cuda_bf16.h")
    prop = propose(root, fail)
    for arch in ("gfx942", "gfx950"):
        outcome = validate(root, image_toolchains(root, rocm_image, arch), prop, fail)
        assert outcome.kept, outcome.reason
        if arch == "gfx942":
            (root / "csrc/bf.cu").write_text(BF16)  # back to the fault for the second arch
    text = (root / "csrc/bf.cu").read_text()
    assert text.count("#ifdef USE_ROCM") == 1 and text.count("#endif") == 1
    assert "#include <hip/hip_runtime.h>\n#include <hip/hip_bf16.h>\n#else\n" in text
    assert not propose_none(root, fail)


@pytest.mark.parametrize(
    ("header", "why"), [("cudaTypedefs.h", "entry-point typedefs"), ("hip/hip_fp8.h", "ROCm toolchain")]
)
def test_declines_with_reason(git_repo, header, why):
    root = git_repo({"a.cu": f"#include <{header}>\n"})
    reasons = declines(root, failure("cuda_header", "a.cu", header))
    assert len(reasons) == 1 and why in reasons[0]


def test_math_constants_map_to_hips_spelling_of_each_constant_in_use(git_repo, rocm_image, nvcc):
    """HIP's hip_math_constants.h names CUDA's CUDART_<X> HIP_<X>: the ROCm branch aliases the ones the repo
    uses (here one in the header, one only in its includer)."""
    header = "#pragma once\n#include <math_constants.h>\n\n__device__ inline float turn() { return 2 * CUDART_PI_F; }\n"
    unit = '#include "consts.cuh"\n\n__global__ void k(double* y) { y[0] = turn() * CUDART_SQRT_2PI; }\n'
    root = git_repo({"csrc/consts.cuh": header, "csrc/k.cu": unit})
    fail = failure("cuda_header", "csrc/consts.cuh", "math_constants.h")
    fail.facts["unit"] = "csrc/k.cu"
    outcome = validate(root, image_toolchains(root, rocm_image, "gfx942"), propose(root, fail), fail)
    assert outcome.kept, outcome.reason
    assert all(c.ok for c in outcome.checks), [c.detail for c in outcome.checks]
    assert (
        "#ifdef USE_ROCM\n#include <hip/hip_math_constants.h>\n#define CUDART_PI_F HIP_PI_F\n"
        "#define CUDART_SQRT_2PI HIP_SQRT_2PI\n#else\n#include <math_constants.h>\n#endif\n"
    ) in (root / "csrc/consts.cuh").read_text()


def test_scan_and_rules_agree_on_which_cuda_headers_have_a_hip_header():
    """The scanner's header table (tools/cpp/headers.py) and the header rule's map are two statements of the
    same facts: a header the rule fixes must not be reported by scan as having no HIP equivalent, and one
    the rule declines must not be offered a HIP header by scan."""
    from agent.proposers.rules.headers import HIP_HEADERS, NO_EQUIVALENT
    from tools.cpp.headers import CUDA_TO_HIP_HEADERS

    mapped = {h for h in HIP_HEADERS if h in CUDA_TO_HIP_HEADERS} | {"math_constants.h"}
    assert not [h for h in mapped if CUDA_TO_HIP_HEADERS[h] is None]
    assert not [h for h in NO_EQUIVALENT if CUDA_TO_HIP_HEADERS.get(h, None) is not None]
