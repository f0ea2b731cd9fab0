"""The text proof of a guard patch (agent/patch/guard_proof) holds only where its premise does: the repo
never defines a ROCm macro itself, the CUDA commands do not pass one, and a created file cannot shadow a
header on CUDA's include path. Anywhere else it proves nothing and nvcc decides."""

from __future__ import annotations

from pathlib import Path

from agent.patch.guard_proof import CudaPremise, prove
from agent.proposers.rules import file_diff

KERNEL = '#include <cuda_runtime.h>\n#include "util.h"\n__global__ void k(int* x) { x[0] = 1; }\n'
GUARDED = KERNEL.replace(
    "#include <cuda_runtime.h>\n",
    '#ifdef USE_ROCM\n#include <hip/hip_runtime.h>\n#include "compat.h"\n#else\n#include <cuda_runtime.h>\n#endif\n',
)
NVCC = ["nvcc -x cu -arch=sm_90 -I{dir} -I{root} -c {file} -o {out}"]


def _proof(root: Path, diff: str, files: list[str], commands: list[str] = NVCC) -> dict:
    return prove(root, diff, files, CudaPremise(root, commands))


def test_a_header_guard_is_proven_without_nvcc_and_says_how(git_repo):
    root = git_repo({"csrc/k.cu": KERNEL, "csrc/util.h": "#pragma once\n"})
    proven = _proof(root, file_diff("csrc/k.cu", KERNEL, GUARDED), ["csrc/k.cu"])
    assert list(proven) == ["csrc/k.cu"] and proven["csrc/k.cu"].ok
    assert "USE_ROCM" in proven["csrc/k.cu"].detail
    assert (root / "csrc/k.cu").read_text() == KERNEL  # the proof reads a preview; the tree is untouched


def test_a_repo_that_defines_a_rocm_macro_itself_gets_no_text_proof(git_repo):
    # a header defining USE_ROCM could be read by CUDA: the macro is no longer known to be undefined there
    util = "#pragma once\n#if defined(__HIPCC__)\n#define USE_ROCM 1\n#endif\n"
    root = git_repo({"csrc/k.cu": KERNEL, "csrc/util.h": util})
    assert _proof(root, file_diff("csrc/k.cu", KERNEL, GUARDED), ["csrc/k.cu"]) == {}
    # only that macro is dropped: a guard on __HIPCC__, which the repo never defines, is still proven
    on_hipcc = GUARDED.replace("#ifdef USE_ROCM", "#ifdef __HIPCC__")
    assert list(_proof(root, file_diff("csrc/k.cu", KERNEL, on_hipcc), ["csrc/k.cu"])) == ["csrc/k.cu"]


def test_a_cuda_command_that_passes_the_macro_gets_no_text_proof(git_repo):
    root = git_repo({"csrc/k.cu": KERNEL, "csrc/util.h": "#pragma once\n"})
    cmd = ["nvcc -x cu -DUSE_ROCM -c {file} -o {out}"]
    assert _proof(root, file_diff("csrc/k.cu", KERNEL, GUARDED), ["csrc/k.cu"], cmd) == {}


def test_a_created_file_that_could_shadow_an_included_header_gets_no_text_proof(git_repo):
    root = git_repo({"csrc/k.cu": KERNEL, "csrc/util.h": "#pragma once\n"})
    guard = file_diff("csrc/k.cu", KERNEL, GUARDED)
    fresh = guard + file_diff("csrc/compat.h", None, "#pragma once\n")
    assert list(_proof(root, fresh, ["csrc/k.cu", "csrc/compat.h"])) == ["csrc/k.cu"]
    # a new csrc/rocm/util.h could be found for `#include "util.h"` through an -I: no proof
    shadow = guard + file_diff("csrc/rocm/util.h", None, "#pragma once\n")
    assert _proof(root, shadow, ["csrc/k.cu", "csrc/rocm/util.h"]) == {}


def test_a_source_linked_out_of_the_repo_is_not_read_and_proves_nothing(git_repo, tmp_path):
    """A symlinked header whose target lies outside the repo could define USE_ROCM; it is never opened,
    so nothing is known about it and the text proof gives way to nvcc."""
    outside = tmp_path / "outside.h"
    outside.write_text("#define UNRELATED 1\n")
    root = git_repo({"csrc/k.cu": KERNEL, "csrc/util.h": "#pragma once\n"})
    (root / "csrc" / "linked.h").symlink_to(outside)
    assert _proof(root, file_diff("csrc/k.cu", KERNEL, GUARDED), ["csrc/k.cu"]) == {}
