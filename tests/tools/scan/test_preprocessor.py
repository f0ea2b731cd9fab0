"""The directive walk: which stretches of a file the ROCm and CUDA builds compile."""

from __future__ import annotations

import pytest

from tools.cpp.build_configs import cuda_config, rocm_config
from tools.cpp.conditions import evaluate
from tools.cpp.preprocessor import region_name, walk
from tools.cpp.source import SourceText


@pytest.mark.parametrize(
    ("expr", "rocm", "cuda"),
    [
        ("defined(USE_ROCM)", 1, 0),
        ("!defined(USE_ROCM)", 0, 1),
        ("defined __HIP_PLATFORM_AMD__", 1, 0),
        ("defined(__HIP_PLATFORM_AMD__) || defined(USE_ROCM)", 1, 0),
        ("defined(__HIPCC__) && defined(__HIP__)", 1, 0),
        ("defined(ENABLE_FP8)", None, None),
        ("defined(ENABLE_FP8) && !defined(USE_ROCM)", 0, None),
        ("defined(ENABLE_FP8) || defined(USE_ROCM)", 1, None),
        ("__CUDA_ARCH__ >= 800", 0, None),
        ("CUDA_VERSION >= 12080 && !defined(USE_ROCM)", 0, None),
        ("__has_include(<cuda_fp8.h>)", 0, 1),
        ("__has_include(<hip/hip_fp8.h>)", 1, 0),
        ("(1 + 2) * 3 == 9 ? 1 : 0", 1, 1),
        ("0x10 >> 2 == 4 && 010 == 8", 1, 1),
        ("defined(", None, None),
        ("SOME_FN(3) > 2", None, None),
    ],
)
def test_expressions_under_both_builds(expr, rocm, cuda):
    assert evaluate(expr, rocm_config()) == rocm
    assert evaluate(expr, cuda_config()) == cuda


def test_hipify_makes_cudacc_defined_on_rocm():
    assert evaluate("defined(__CUDACC__)", rocm_config()) == 0
    assert evaluate("defined(__CUDACC__)", rocm_config(hipify=True)) == 1


def regions_of(text: str) -> dict[int, str]:
    src = SourceText("k.cu", text)
    regions = walk(src.masked, src.raw, rocm_config(), cuda_config())
    return {
        i + 1: region_name(*regions.at(src.raw.index(line) if line else 0))
        for i, line in enumerate(text.split("\n"))
        if line and not line.startswith("#")
    }


def test_regions_of_nested_branches():
    text = "\n".join(
        [
            "common_a",
            "#ifdef USE_ROCM",
            "rocm_a",
            "#if defined(FEATURE)",
            "rocm_maybe",
            "#endif",
            "#else",
            "cuda_a",
            "#ifndef __HIP_PLATFORM_AMD__",
            "cuda_b",
            "#endif",
            "#endif",
            "#if 0",
            "dead_a",
            "#endif",
            "common_b",
            "",
        ]
    )
    assert regions_of(text) == {
        1: "common",
        3: "rocm_only",
        5: "rocm_only",
        8: "cuda_only",
        10: "cuda_only",
        14: "dead",
        16: "common",
    }


def test_directive_inside_a_block_comment_is_ignored():
    text = "/*\n#ifndef USE_ROCM\n*/\nshared_line\n"
    assert regions_of(text) == {1: "common", 3: "common", 4: "common"}


def test_continued_directive_lines():
    text = "#if defined(__HIPCC__) || \\\n    defined(USE_ROCM)\nrocm_side\n#else\ncuda_side\n#endif\n"
    assert regions_of(text)[3] == "rocm_only" and regions_of(text)[5] == "cuda_only"


def test_undef_turns_a_macro_off():
    text = "#undef USE_ROCM\n#ifdef USE_ROCM\nnever\n#else\nnow_compiled\n#endif\n"
    assert regions_of(text) == {3: "dead", 5: "common"}


def test_unbalanced_directives_do_not_crash():
    text = "#endif\n#else\nline\n#if defined(USE_ROCM\nrest\n"
    assert regions_of(text)[3] == "common"


def test_includes_carry_their_region():
    src = SourceText("k.cu", '#include "a.h"\n#ifndef USE_ROCM\n#include <cuda_bf16.h> // why\n#endif\n')
    regions = walk(src.masked, src.raw, rocm_config(), cuda_config())
    assert [(i.header, i.angled, i.rocm) for i in regions.includes] == [
        ("a.h", False, True),
        ("cuda_bf16.h", True, False),
    ]


def test_crlf_files_and_continuations():
    text = "#if defined(__HIPCC__) || \\\r\n    defined(USE_ROCM)\r\nrocm_side\r\n#else\r\ncuda_side\r\n#endif\r\n"
    regions = regions_of(text)
    assert regions[3] == "rocm_only" and regions[5] == "cuda_only"


def test_pathological_expression_is_unknown_not_a_crash():
    assert evaluate("(" * 5000 + "1" + ")" * 5000, rocm_config()) is None
