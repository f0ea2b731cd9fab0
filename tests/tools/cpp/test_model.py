"""The shared C/C++ source model: what each build compiles, across included headers."""

from __future__ import annotations

from tools.cpp import (
    IncludeGraph,
    analyze,
    cuda_only_library,
    hip_header_for,
    line_platforms,
    rocm_only_file,
    seed_for,
)
from tools.scan import scan_repo

COMPAT = """#pragma once
#ifdef USE_ROCM
  #define MY_FP8_X2 0
  #define MY_FULL_MASK 0xffffffffffffffffULL
#else
  #define MY_FP8_X2 1
#endif
"""
KERNEL = """#include "compat.h"
#if MY_FP8_X2
__device__ void cvt() { asm volatile("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(a) : "f"(b), "f"(c)); }
#else
__device__ void cvt() {}
#endif
"""


def test_rocm_macro_defined_in_a_header_decides_the_includers_branches(tmp_path):
    (tmp_path / "compat.h").write_text(COMPAT)
    (tmp_path / "kernel.cu").write_text(KERNEL)
    assert scan_repo(tmp_path) == []


def test_without_the_header_the_same_branch_is_reported(tmp_path):
    (tmp_path / "kernel.cu").write_text(KERNEL.replace('#include "compat.h"\n', ""))
    assert [f.kind for f in scan_repo(tmp_path)] == ["inline_ptx"]


def test_a_header_a_rocm_macro_leaves_out_is_not_reached_through_that_include(tmp_path):
    """The rescan with the header's macros turns the include off for ROCm: the header it named (with
    a CUDA-only construct) is then reached by no file the ROCm build compiles."""
    (tmp_path / "compat.h").write_text(COMPAT)
    (tmp_path / "fp8_x2.cuh").write_text(
        '__device__ void cvt() { asm volatile("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(a)); }\n'
    )
    kernel = '#include "compat.h"\n#if MY_FP8_X2\n#include "fp8_x2.cuh"\n#endif\n__global__ void k() {}\n'
    (tmp_path / "kernel.cu").write_text(kernel)
    assert scan_repo(tmp_path) == []
    (tmp_path / "kernel.cu").write_text(kernel.replace('#include "compat.h"\n', ""))  # unknown: reached
    assert [(f.file, f.kind) for f in scan_repo(tmp_path)] == [("fp8_x2.cuh", "inline_ptx")]


def test_seed_from_the_include_graph():
    header, kernel = analyze(COMPAT), analyze(KERNEL)

    class File:
        def __init__(self, regions):
            self.includes = [i.header for i in regions.includes if i.rocm is not False]
            self.cuda_includes = []

    graph = IncludeGraph({"compat.h": File(header), "kernel.cu": File(kernel)})
    seed = seed_for(graph, "kernel.cu", {"compat.h": header.exports})
    assert seed["MY_FP8_X2"][0].value == 0 and seed["MY_FP8_X2"][1].value == 1
    assert line_platforms(KERNEL, seed=seed)[2] == "cuda"
    assert line_platforms(KERNEL)[2] == "both"  # unknown without the header: still counts as compiled


def test_macro_defined_only_in_cuda_branch_is_undefined_on_rocm():
    text = "#ifndef USE_ROCM\n#define HAS_TMA\n#endif\n#ifdef HAS_TMA\ntma();\n#endif\n"
    assert line_platforms(text)[4] == "cuda"


def test_other_vendors_branches_are_neither_build():
    text = "#if defined(USE_MUSA)\nmusa();\n#elif defined(USE_ROCM)\nrocm();\n#else\ncuda();\n#endif\n"
    assert line_platforms(text)[1] == "dead"
    assert line_platforms(text)[3] == "rocm"
    assert line_platforms(text)[5] == "cuda"


def test_unknown_feature_macros_still_count_as_both():
    assert line_platforms("#ifdef ENABLE_BF16\nx();\n#endif\n")[1] == "both"


def test_rocm_only_files():
    assert rocm_only_file("csrc/rocm/attention.cu", analyze(""))
    assert rocm_only_file("kernels/foo.hip", analyze(""))
    assert rocm_only_file("csrc/a.cu", analyze("#include <hip/hip_runtime.h>\n"))
    assert not rocm_only_file("csrc/a.cu", analyze("#ifdef USE_ROCM\n#include <hip/hip_runtime.h>\n#endif\n"))


def test_header_tables():
    assert hip_header_for("cuda_bf16.h") == "hip/hip_bf16.h"
    assert hip_header_for("cuda.h") is None
    assert cuda_only_library("cutlass/gemm/device/gemm.h") == "CUTLASS"
    assert cuda_only_library("cute/tensor.hpp") == "CuTe"
    assert cuda_only_library("hipcub/hipcub.hpp") is None


def test_include_names_resolve_like_a_normalized_path_beside_the_includer():
    """`./x.h`, `../x.h`, `a//b.h` and plain `a/b.h` find the file a compiler would open beside the
    includer (plain names skip the path normalization, which must change nothing)."""

    class Unit:
        def __init__(self) -> None:
            self.includes: list[str] = []
            self.cuda_includes: list[str] = []

    files = ["csrc/core/k.cu", "csrc/core/x.h", "csrc/x.h", "csrc/core/a/b.h", "csrc/a/b.h", "x.h"]
    graph = IncludeGraph({rel: Unit() for rel in files})
    expected = {
        "x.h": ["csrc/core/x.h"],
        "./x.h": ["csrc/core/x.h"],
        "../x.h": ["csrc/x.h"],
        "a/b.h": ["csrc/core/a/b.h"],
        "a//b.h": ["csrc/core/a/b.h"],
        "a/./b.h": ["csrc/core/a/b.h"],
        "../a/b.h": ["csrc/a/b.h"],
        "core/x.h": ["csrc/core/x.h"],
    }
    assert {h: graph.resolve("csrc/core/k.cu", h) for h in expected} == expected
