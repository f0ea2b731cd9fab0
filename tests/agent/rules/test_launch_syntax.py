"""Launches written `<< <grid, block >> >(args)` (pynvvideocodec's ColorSpace.cu, after an editor's formatter):
nvcc launches them, hipcc says "expected expression"; the chevrons are joined, the same tokens for nvcc."""

from __future__ import annotations

from agent.proposers.rules import Workspace, propose_for
from agent.proposers.rules.launch_syntax import join_chevrons
from sandboxes.docker import DockerSandbox
from tests.agent.rules.helpers import image_toolchains, validate
from tools.diagnose import diagnose_text

KERNEL = """\
#ifdef USE_ROCM
#include <hip/hip_runtime.h>
#else
#include <cuda_runtime.h>
#endif
#include <vector>

template <class T>
__global__ void scale(T* x, int n) {
    if (threadIdx.x < n) x[threadIdx.x] *= static_cast<T>(2);
}

template <class T>
void launch(T* x, int n, cudaStream_t stream) {
    std::vector<std::vector<int>> > ignored;
    scale<T>
        << <dim3((n + 63) / 64), dim3(64), 0, stream >> >
        (x, n);
    scale<T><<<1, static_cast<int>(n)>>>(x, n);
}

template void launch<float>(float*, int, cudaStream_t);
"""


def test_split_chevrons_are_joined_and_nothing_else_is_touched():
    fixed = join_chevrons(KERNEL)
    assert "        <<<dim3((n + 63) / 64), dim3(64), 0, stream >>>\n        (x, n);" in fixed
    assert "std::vector<std::vector<int>> > ignored;" in fixed  # a template's `>> >` is no launch
    assert join_chevrons(fixed) == fixed


def test_the_launch_compiles_with_hipcc_and_cuda_sees_the_same_tokens(git_repo, rocm_image, nvcc):
    source = KERNEL.replace("    std::vector<std::vector<int>> > ignored;\n", "").replace(
        "cudaStream_t", "hipStream_t"
    )
    source = source.replace(
        "#include <vector>\n", "#ifndef USE_ROCM\n#define hipStream_t cudaStream_t\n#endif\n"
    )
    root = git_repo({"ColorSpace.cu": source})
    with DockerSandbox(rocm_image, str(root)) as box:
        out = box.run(
            "hipcc -x hip -DUSE_ROCM --offload-arch=gfx942 -c ColorSpace.cu -o /tmp/c.o", cwd=str(root)
        )
    assert not out.ok and "expected expression" in out.output
    fail = diagnose_text(out.output, repo_root=root, source="hipcc")[0]
    (prop,) = propose_for(fail, Workspace(root=root)).proposals
    assert prop.proposer == "rule:launch_syntax"
    outcome = validate(root, image_toolchains(root, rocm_image, "gfx942"), prop, fail)
    assert outcome.kept, outcome.reason
    assert all(c.ok for c in outcome.checks), [c.detail for c in outcome.checks]
    assert any("cuda -E identity" in c.name for c in outcome.checks)
