"""Function templates the ROCm build never instantiates: their bodies yield no findings."""

from __future__ import annotations

import random

import pytest

from tests.tools.scan.helpers import scan_files
from tools.scan.instantiation import _NAME_BEFORE_PAREN, name_before

SEARCH = (
    "template <typename T>\n__device__ int search(T v) {\n  return __ballot_sync(0xffffffff, v > 0);\n}\n"
)
CUDA_ONLY_CALLER = "#ifndef USE_ROCM\n__global__ void k(int *o) { *o = search<int>(1); }\n#endif\n"
SHARED_CALLER = "__global__ void s(int *o) { *o = search<int>(2); }\n"


def _symbols(tmp_path, files: dict[str, str]) -> set[str]:
    return {f.symbol or "" for f in scan_files(tmp_path, files)}


def test_template_called_only_from_cuda_only_code_is_not_reported(tmp_path):
    assert "__ballot_sync" not in _symbols(tmp_path, {"k.cu": SEARCH + CUDA_ONLY_CALLER})


@pytest.mark.parametrize(
    "rest",
    [
        CUDA_ONLY_CALLER + SHARED_CALLER,  # the ROCm build instantiates it here
        CUDA_ONLY_CALLER + "template __device__ int search<float>(float);\n",  # explicit instantiation
        "",  # no caller in this file: nothing says it is not instantiated
    ],
    ids=["shared-caller", "explicit-instantiation", "no-caller"],
)
def test_template_the_rocm_build_may_instantiate_is_reported(tmp_path, rest):
    assert "__ballot_sync" in _symbols(tmp_path, {"k.cu": SEARCH + rest})


def test_template_in_a_header_is_reported(tmp_path):
    """Files that include the header may instantiate it."""
    assert "__ballot_sync" in _symbols(tmp_path, {"k.cuh": SEARCH + CUDA_ONLY_CALLER})


def test_launch_bounds_before_the_kernel_name(tmp_path):
    kernel = (
        "template <int N>\n"
        "__global__ void __launch_bounds__(256) reduce(float *x) {\n"
        "  x[0] = __shfl_xor_sync(0xffffffff, x[0], 1);\n"
        "}\n"
    )
    cuda_only = "#ifndef USE_ROCM\nvoid go(float *x) { reduce<4><<<1, 256>>>(x); }\n#endif\n"
    shared = "void both(float *x) { reduce<8><<<1, 256>>>(x); }\n"
    assert "__shfl_xor_sync" not in _symbols(tmp_path, {"k.cu": kernel + cuda_only})
    assert "__shfl_xor_sync" in _symbols(tmp_path / "2", {"k.cu": kernel + cuda_only + shared})


def test_the_name_before_a_parenthesis_is_what_the_pattern_finds():
    """A function template's name is read back from its `(`: the same word and offset as the
    pattern searched from the end of the template head."""
    rng = random.Random(11)
    pieces = [
        "void",
        " ",
        "\t",
        "\n",
        "foo",
        "_x",
        "2",
        "\u00e9",
        "*",
        "<T>",
        "::",
        "__launch_bounds__",
        "9a",
    ]
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randrange(0, 8)))
        start = rng.randrange(0, len(text) + 1)
        m = _NAME_BEFORE_PAREN.search(text, start, len(text))
        assert name_before(text, start, len(text)) == (m and (m.group(1), m.start(1))), repr((text, start))
