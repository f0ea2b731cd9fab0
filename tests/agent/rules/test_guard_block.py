"""One guard per include block, the include found where it is, and patches in the repo's clang-format style."""

from __future__ import annotations

import shutil

from agent.proposers.rules import Workspace, propose_for
from tests.agent.rules.helpers import failure, host_toolchains, propose, validate
from tests.conftest import require

BLOCK = """// Fused top-k.
#include <cuda_runtime.h>
#include <cstdint>
#include <cub/cub.cuh>
#include <cuda/std/type_traits>

__global__ void k(int* x) { x[0] = cuda::std::is_integral<int>::value; }
"""
CLANG_FORMAT = "BasedOnStyle: Google\nIndentPPDirectives: BeforeHash\nSortIncludes: false\n"


def test_every_cuda_include_of_a_block_is_guarded_in_one_edit(git_repo):
    root = git_repo({"k.cu": BLOCK})
    prop = propose(root, failure("cuda_header", "k.cu", "cuda_runtime.h"))
    assert prop.diff.count("+#ifdef USE_ROCM") == 1
    rocm = prop.diff.split("+#ifdef USE_ROCM\n", 1)[1].split("+#else\n", 1)[0]
    assert rocm == (
        "+#include <hip/hip_runtime.h>\n+#include <cstdint>\n+#include <hipcub/hipcub.hpp>\n"
        "+namespace cub = hipcub;\n+#include <type_traits>\n"
        "+namespace cuda { namespace std { using namespace ::std; } }\n"
    )
    # the other families' failures in the same block have nothing left to do afterwards
    (root / "k.cu").write_text(_applied(root, prop))
    for kind, header in (("cub", "cub/cub.cuh"), ("cuda_std", "cuda/std/type_traits")):
        assert not propose_for(failure(kind, "k.cu", header), Workspace(root=root)).proposals


def _applied(root, prop) -> str:
    import subprocess

    subprocess.run(["git", "apply", "-"], input=prop.diff, text=True, cwd=root, check=True)
    return (root / "k.cu").read_text()


def test_include_reported_against_the_unit_is_guarded_in_the_header_that_has_it(git_repo):
    root = git_repo(
        {
            "csrc/ops.cu": '#include "util.cuh"\n__global__ void k() {}\n',
            "csrc/util.cuh": "#pragma once\n#include <cuda_fp16.h>\n",
        }
    )
    prop = propose(root, failure("cuda_header", "csrc/ops.cu", "cuda_fp16.h"))
    assert prop.files == ["csrc/util.cuh"] and "+#include <hip/hip_fp16.h>" in prop.diff


def test_guard_follows_the_repos_clang_format_and_still_proves_cuda_identity(git_repo, hipcc, nvcc):
    require(shutil.which("clang-format") is not None, "clang-format (apt-get install clang-format)")
    kernel = (
        "#include <cuda_runtime.h>\n#include <cuda_fp16.h>\n\n__global__ void k(__half* x) { x[0] = x[1]; }\n"
    )
    root = git_repo({".clang-format": CLANG_FORMAT, "k.cu": kernel})
    fail = failure("cuda_header", "k.cu", "cuda_runtime.h")
    prop = propose(root, fail, "gfx90a")
    assert (
        "+#ifdef USE_ROCM\n+  #include <hip/hip_runtime.h>\n+  #include <hip/hip_fp16.h>\n+#else\n"
        in prop.diff
    )
    outcome = validate(root, host_toolchains(root), prop, fail)
    assert outcome.kept, outcome.reason
    touched = "--lines=1:7"
    out = (
        __import__("subprocess")
        .run(
            ["clang-format", "--style=file", touched, "k.cu"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        )
        .stdout
    )
    assert out == (root / "k.cu").read_text()  # clang-format of the touched lines is a no-op


def test_without_a_clang_format_the_guard_is_left_as_written(git_repo):
    root = git_repo({"k.cu": "#include <cuda_runtime.h>\n"})
    prop = propose(root, failure("cuda_header", "k.cu", "cuda_runtime.h"))
    assert "+#ifdef USE_ROCM\n+#include <hip/hip_runtime.h>\n+#else\n" in prop.diff


def test_the_compat_include_lands_with_the_other_includes_inside_the_include_guard():
    from agent.proposers.rules.warp import add_include

    text = (
        "/* Copyright: the authors. */\n#ifndef K_CUH_\n#define K_CUH_\n\n"
        "#ifdef USE_ROCM\n#include <hip/hip_runtime.h>\n"
        "#else\n#include <cuda_runtime.h>\n#endif\n\n#include <cstdint>\n\nint x;\n#endif\n"
    )
    out = add_include(text, "rocm_compat.h")
    assert '#include <cstdint>\n#include "rocm_compat.h"\n\nint x;\n' in out
    assert out.startswith("/* Copyright")  # never above the license


def test_what_nvcc_declares_implicitly_comes_from_hip_runtime_on_rocm(git_repo):
    root = git_repo(
        {"u.cu": '#include <cstdint>\n#include "k.cuh"\n__global__ void f(int* x) { x[threadIdx.x] = 0; }\n'}
    )
    fail = failure("compile_error", "u.cu", "threadIdx", "use of undeclared identifier 'threadIdx'")
    prop = propose(root, fail)
    assert "+#ifdef USE_ROCM\n+#include <hip/hip_runtime.h>\n+#endif\n __global__" in prop.diff
