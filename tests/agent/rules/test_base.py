"""agent/proposers/rules/base.py and guard.py: the registry, declines with reasons, git-apply-able diffs,
guard merging."""

from __future__ import annotations

from agent.proposers.rules import Decline, Workspace, all_fixers, file_diff, fixers_for, propose_for
from agent.proposers.rules.guard import guard_includes
from tools.patching import apply_diff
from tools.records import Failure

HIP = {"cuda_runtime.h": ["#include <hip/hip_runtime.h>"], "cuda_bf16.h": ["#include <hip/hip_bf16.h>"]}


def test_registry_has_a_fixer_per_compile_family_and_python_imports():
    families = {f.family for f in all_fixers()}
    assert {"headers", "cub", "cuda_std", "types", "warp", "warp_size", "python_imports", "ptx"} <= families
    # the type-name rule first; a bf16 intrinsic or a 16-bit atomic HIP lacks is diagnosed as bf16 too
    assert [f.family for f in fixers_for("bf16_type")] == ["types", "half_intrinsics", "atomics16"]
    assert fixers_for("resource") == []


def test_declines_are_collected_with_reasons_and_environment_flag(git_repo):
    root = git_repo({"a.cu": "#include <hip/hip_bf16.h>\n"})
    fail = Failure(
        kind="cuda_header", message="'hip/hip_bf16.h' file not found", file="a.cu", symbol="hip/hip_bf16.h"
    )
    result = propose_for(fail, Workspace(root=root))
    assert not result.proposals and result.environment and "ROCm" in result.declines[0]
    assert isinstance(Decline("why"), Exception) and Decline("why").reason == "why"


def test_new_file_diff_applies_with_git(git_repo):
    root = git_repo({"a.h": "x\n"})
    apply_diff(root, file_diff("sub/new.h", None, "#pragma once\n") + file_diff("a.h", "x\n", "y\n"))
    assert (root / "sub/new.h").read_text() == "#pragma once\n" and (root / "a.h").read_text() == "y\n"
    assert file_diff("a.h", "same\n", "same\n") == ""


def test_guard_does_not_merge_into_a_code_block():
    text = (
        "#include <cuda_runtime.h>\n#ifdef USE_ROCM\n__device__ int f() { return 1; }\n#else\n"
        "__device__ int f() { return 2; }\n#endif\n"
    )
    out = guard_includes(text, HIP)
    assert out.startswith(
        "#ifdef USE_ROCM\n#include <hip/hip_runtime.h>\n#else\n#include <cuda_runtime.h>\n#endif\n"
    )
    assert out.count("#ifdef USE_ROCM") == 2


def test_guard_merges_before_an_ifndef_block_and_keeps_missing_final_newline():
    text = (
        "#include <cuda_bf16.h>\n#ifndef USE_ROCM\n#include <cuda_runtime.h>\n"
        "#else\n#include <hip/hip_runtime.h>\n#endif"
    )
    out = guard_includes(text, HIP)
    assert out == (
        "#ifndef USE_ROCM\n#include <cuda_bf16.h>\n#include <cuda_runtime.h>\n#else\n"
        "#include <hip/hip_bf16.h>\n#include <hip/hip_runtime.h>\n#endif"
    )
    assert guard_includes(out, HIP) == out
