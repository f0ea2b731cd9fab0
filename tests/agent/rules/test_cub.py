"""cub and cuda_std rules: hipcub alias and std traits under USE_ROCM, proven with real compilers."""

from __future__ import annotations

import pytest

from agent.proposers.rules import Workspace, propose_for
from tests.agent.rules.helpers import declines, failure, host_toolchains, image_toolchains, propose, validate

CUB = """#include <cub/cub.cuh>

__global__ void block_sum(const float* in, float* out) {
  using Reduce = cub::BlockReduce<float, 128>;
  __shared__ typename Reduce::TempStorage tmp;
  float s = Reduce(tmp).Sum(in[threadIdx.x]);
  if (threadIdx.x == 0) *out = s;
}
"""
STD = """#include <cuda/std/type_traits>
#include <cuda/std/limits>

template <typename T>
__global__ void fill(T* x) {
  if constexpr (cuda::std::is_floating_point_v<T>) x[threadIdx.x] = cuda::std::numeric_limits<T>::max();
}
template __global__ void fill<float>(float*);
"""


def _again(root, fail):
    return propose_for(fail, Workspace(root=root)).proposals


CUB_MAX = """#include <cub/cub.cuh>
#include <cuda/functional>

__global__ void block_max(const float* in, float* out) {
  using Reduce = cub::BlockReduce<float, 128>;
  __shared__ typename Reduce::TempStorage tmp;
  float m = Reduce(tmp).Reduce(in[threadIdx.x], cuda::maximum<>{});
  if (threadIdx.x == 0) *out = m;
}
"""


@pytest.mark.parametrize("first", ["cub/cub.cuh", "cuda/functional"])
def test_cub_with_cuda_functional_in_one_block_is_one_proven_edit(git_repo, rocm_image, nvcc, first):
    """CCCL 3 code reduces with cuda::maximum (cub::Max is gone): whichever include fails first, one edit
    guards both (hipCUB, and the compat header's cuda::maximum), so the patch's own lines compile on ROCm."""
    root = git_repo({"csrc/reduce.cu": CUB_MAX})
    fail = failure("cub" if first.startswith("cub") else "cuda_std", "csrc/reduce.cu", first)
    prop = propose(root, fail)
    outcome = validate(root, image_toolchains(root, rocm_image, "gfx942"), prop, fail)
    assert outcome.kept, outcome.reason
    assert all(c.ok for c in outcome.checks), [c.detail for c in outcome.checks]  # hipcc, nvcc, CUDA -E
    text = (root / "csrc/reduce.cu").read_text()
    assert "namespace cub = hipcub;" in text and '#include "rocm_compat.h"' in text
    assert "struct maximum" in (root / "csrc/rocm_compat.h").read_text()
    assert not _again(root, fail)


@pytest.mark.slow
def test_cub_gets_hipcub_and_alias_and_builds_for_gfx942(git_repo, rocm_image, nvcc):
    root = git_repo({"csrc/reduce.cu": CUB})
    fail = failure("cub", "csrc/reduce.cu", "cub/cub.cuh")
    prop = propose(root, fail)
    assert (
        "+#include <hipcub/hipcub.hpp>\n+namespace cub = hipcub;\n+#else\n #include <cub/cub.cuh>"
        in prop.diff
    )
    outcome = validate(root, image_toolchains(root, rocm_image, "gfx942"), prop, fail)
    assert outcome.kept, outcome.reason
    assert [c.detail for c in outcome.checks if c.name.startswith("hipcc")] == ["compiles"]
    assert not _again(root, fail)


def test_cuda_std_traits_map_to_std_on_host_hipcc_and_nvcc(git_repo, hipcc, nvcc):
    root = git_repo({"csrc/fill.cu": STD})
    fail = failure("cuda_std", "csrc/fill.cu", "cuda/std/type_traits")
    prop = propose(root, fail, "gfx90a")
    assert prop.diff.count("namespace cuda { namespace std { using namespace ::std; } }") == 1
    outcome = validate(root, host_toolchains(root), prop, fail)
    assert outcome.kept, outcome.reason
    assert all(c.ok for c in outcome.checks) and len(outcome.checks) == 3
    assert not _again(root, fail)


def test_cuda_std_traits_build_for_gfx950_in_image(git_repo, rocm_image):
    root = git_repo({"csrc/fill.cu": STD})
    fail = failure("cuda_std", "csrc/fill.cu", "cuda/std/type_traits")
    outcome = validate(root, image_toolchains(root, rocm_image, "gfx950"), propose(root, fail), fail)
    assert outcome.kept, outcome.reason


def test_declines_pipelines_and_renamed_operators(git_repo):
    root = git_repo({"a.cu": "#include <cuda/pipeline>\n#include <cub/cub.cuh>\n"})
    assert "libhipcxx" in declines(root, failure("cuda_std", "a.cu", "cuda/pipeline"))[0]
    renamed = failure("cub", "a.cu", "Max", message="error: no member named 'Max' in namespace 'cub'")
    assert "cuda::maximum" in declines(root, renamed)[0]


def test_scan_tile_state_is_declined_with_what_rocprim_offers_instead(git_repo):
    """hipCUB 6.4 has no ScanTileState; the message names rocPRIM's internal counterpart and why it is no
    drop-in (the hipcc message after the cub -> hipcub alias, as on a decoupled look-back scan kernel)."""
    root = git_repo({"scan.cu": "#include <cub/cub.cuh>\nusing State = cub::ScanTileState<int>;\n"})
    msg = "error: no template named 'ScanTileState' in namespace 'hipcub'"
    why = declines(root, failure("cub", "scan.cu", "hipcub::ScanTileState", message=msg))[0]
    assert "rocprim::detail::lookback_scan_state" in why and "redesign" in why
    msg = "error: no template named 'TilePrefixCallbackOp' in namespace 'hipcub'"
    why = declines(root, failure("cub", "scan.cu", "hipcub::TilePrefixCallbackOp", message=msg))[0]
    assert "single-pass scan operators" in why


def test_the_image_hipcub_really_lacks_the_look_back_types(tmp_path, rocm_image):
    """The decline is a fact of the ROCm image, not a guess: hipcc rejects each name, rocPRIM has its own."""
    from agent.proposers.rules.cub import NO_HIPCUB
    from sandboxes.docker import DockerSandbox

    uses = "".join(f"using T{i} = hipcub::{n};\n" for i, n in enumerate(NO_HIPCUB))
    (tmp_path / "scan.cu").write_text("#include <hipcub/hipcub.hpp>\n" + uses)
    (tmp_path / "rp.cu").write_text(
        "#include <rocprim/device/detail/lookback_scan_state.hpp>\n"
        "using S = rocprim::detail::lookback_scan_state<int>;\n"
    )
    with DockerSandbox(rocm_image, str(tmp_path)) as box:
        out = box.run("hipcc -x hip --offload-arch=gfx942 -fsyntax-only scan.cu", cwd=str(tmp_path))
        ours = box.run("hipcc -x hip --offload-arch=gfx942 -fsyntax-only rp.cu", cwd=str(tmp_path))
    assert not out.ok
    for name in NO_HIPCUB:
        assert f"'{name}' in namespace 'hipcub'" in out.stderr, (name, out.stderr[-2000:])
    assert ours.ok, ours.stderr[-2000:]
