"""Scan precision on C++/CUDA: each construct unguarded is found exactly once, with kind, line,
symbol and fix family right; the same construct behind any correct guard is not reported."""

from __future__ import annotations

import random

import pytest

from tests.tools.scan.helpers import GUARDS, scan_files, summary
from tools.cpp.source import words_with_regex
from tools.scan.warp_size import _SHARED_32, shared_per_warp_arrays

# (id, construct line, kind, symbol, fix family)
CONSTRUCTS = [
    ("cuda_runtime", "#include <cuda_runtime.h>", "cuda_header", "cuda_runtime.h", "guard_cuda_headers"),
    ("cuda_bf16", "#include <cuda_bf16.h>", "cuda_header", "cuda_bf16.h", "guard_cuda_headers"),
    ("cuda_fp16", '#include "cuda_fp16.h"', "cuda_header", "cuda_fp16.h", "guard_cuda_headers"),
    ("cuda_fp8", "#include <cuda_fp8.h>", "cuda_header", "cuda_fp8.h", "guard_cuda_headers"),
    ("cuda_h", "#include <cuda.h>", "cuda_header", "cuda.h", "guard_cuda_headers"),
    ("cudaTypedefs", "#include <cudaTypedefs.h>", "cuda_header", "cudaTypedefs.h", "guard_cuda_headers"),
    (
        "runtime_api",
        "#include <cuda_runtime_api.h>",
        "cuda_header",
        "cuda_runtime_api.h",
        "guard_cuda_headers",
    ),
    ("cub", "#include <cub/cub.cuh>", "cub", "cub/cub.cuh", "hipcub_alias"),
    ("cub_warp", "#include <cub/warp/warp_reduce.cuh>", "cub", "cub/warp/warp_reduce.cuh", "hipcub_alias"),
    ("cuda_std", "#include <cuda/std/type_traits>", "cuda_std", "cuda/std/type_traits", "cuda_std_to_std"),
    (
        "shfl_xor",
        "__device__ float f(float v) { return __shfl_xor_sync(0xffffffff, v, 1); }",
        "warp_intrinsic",
        "__shfl_xor_sync",
        "warp_compat",
    ),
    ("syncwarp", "__device__ void g() { __syncwarp(); }", "warp_intrinsic", "__syncwarp", "warp_compat"),
    (
        "activemask",
        "__device__ unsigned h() { return __activemask(); }",
        "warp_intrinsic",
        "__activemask",
        "warp_compat",
    ),
    (
        "ballot",
        "__device__ unsigned b(int p) { return __ballot_sync(~0u, p); }",
        "warp_intrinsic",
        "__ballot_sync",
        "warp_compat",
    ),
    (
        "lane_mod",
        "__device__ int lane() { return threadIdx.x % 32; }",
        "warp_size",
        "% 32",
        "warp_size_source",
    ),
    (
        "lane_and",
        "__device__ int lane(int tid) { return tid & 31; }",
        "warp_size",
        "& 31",
        "warp_size_source",
    ),
    (
        "lane_hex",
        "__device__ int lane(int lane_id) { return lane_id & 0x1f; }",
        "warp_size",
        "& 0x1f",
        "warp_size_source",
    ),
    (
        "warp_shift",
        "__device__ int w() { int warp_id = threadIdx.x >> 5; return warp_id; }",
        "warp_size",
        ">> 5",
        "warp_size_source",
    ),
    (
        "full_mask",
        "constexpr unsigned kFullMask = 0xffffffff;",
        "warp_size",
        "0xffffffff",
        "warp_size_source",
    ),
    ("warp_define", "#define WARP_SIZE 32", "warp_size", "WARP_SIZE", "warp_size_source"),
    ("warp_constexpr", "constexpr int kWarpSize = 32;", "warp_size", "kWarpSize", "warp_size_source"),
    (
        "cub_warp_threads",
        "constexpr int kLanes = CUB_WARP_THREADS;",
        "warp_size",
        "CUB_WARP_THREADS",
        "warp_size_source",
    ),
    (
        "shared_extent",
        "__global__ void r() { __shared__ float warp_sums[32]; }",
        "warp_size",
        "warp_sums[32]",
        "warp_size_source",
    ),
    (
        "ptx_lop3",
        'asm volatile("lop3.b32 %0, %1, %2, %3, 0x96;" : "=r"(r) : "r"(a), "r"(b), "r"(c));',
        "inline_ptx",
        "lop3.b32",
        "ptx_to_c",
    ),
    (
        "ptx_mma",
        'asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0}, {%1};" : "=f"(d));',
        "inline_ptx",
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
        "ptx_mfma_or_exclude",
    ),
    ("bf16", "__device__ __nv_bfloat16 one();", "bf16_type", "__nv_bfloat16", "hip_bf16_typedef"),
    ("bf162", "__device__ __nv_bfloat162 two();", "bf16_type", "__nv_bfloat162", "hip_bf16_typedef"),
    ("fp8", "__device__ __nv_fp8_e4m3 q;", "fp8_type", "__nv_fp8_e4m3", "fp8_fnuz_ocp"),
    ("fp8_e5m2", "__device__ __nv_fp8_e5m2 q;", "fp8_type", "__nv_fp8_e5m2", "fp8_fnuz_ocp"),
    (
        "driver_proc",
        'void* p = 0; void load() { cuGetProcAddress("cuTensorMapEncodeTiled", &p, 12000, 0); }',
        "stream_api",
        "cuGetProcAddress",
        "driver_api_guard",
    ),
    (
        "tensor_map",
        "__device__ void t(const CUtensorMap* m);",
        "stream_api",
        "CUtensorMap",
        "driver_api_guard",
    ),
    ("runtime_api", "void s() { cudaStream_t stream; }", "stream_api", "cudaStream_t", "hip_runtime_rename"),
]
IDS = [c[0] for c in CONSTRUCTS]


@pytest.mark.parametrize(("name", "body", "kind", "symbol", "fix"), CONSTRUCTS, ids=IDS)
def test_unguarded_construct_is_found_exactly_once(tmp_path, name, body, kind, symbol, fix):
    findings = scan_files(tmp_path, {"csrc/k.cu": f"// kernel\n{body}\n"})
    assert summary(findings) == [(kind, "csrc/k.cu", 2, symbol)]
    assert findings[0].facts["fix_family"] == fix
    assert findings[0].source == "scan"
    assert findings[0].signature.startswith(f"{kind}:csrc/k.cu:{symbol}")


@pytest.mark.parametrize("guard", list(GUARDS), ids=list(GUARDS))
@pytest.mark.parametrize(("name", "body", "kind", "symbol", "fix"), CONSTRUCTS, ids=IDS)
def test_guarded_construct_is_not_reported(tmp_path, guard, name, body, kind, symbol, fix):
    text = GUARDS[guard].format(body=body)
    assert scan_files(tmp_path, {"csrc/k.cu": text}) == []


@pytest.mark.parametrize(("name", "body", "kind", "symbol", "fix"), CONSTRUCTS, ids=IDS)
def test_construct_in_comments_and_strings_is_not_reported(tmp_path, name, body, kind, symbol, fix):
    escaped = body.replace("\\", "\\\\").replace('"', '\\"')
    text = f'// {body}\n/* {body}\n   {body} */\nconst char* doc = "{escaped}";\n'
    assert scan_files(tmp_path, {"csrc/k.cu": text}) == []


def test_rocm_branch_of_an_ifdef_is_scanned(tmp_path):
    # A CUDA header inside the ROCm branch is compiled by the ROCm build: reported.
    text = "#ifdef USE_ROCM\n#include <cuda_bf16.h>\n#else\n#include <cuda_bf16.h>\n#endif\n"
    findings = scan_files(tmp_path, {"k.cu": text})
    assert summary(findings) == [("cuda_header", "k.cu", 2, "cuda_bf16.h")]
    assert findings[0].facts["region"] == "rocm_only"


def test_unknown_feature_macro_does_not_hide_a_construct(tmp_path):
    text = "#ifdef ENABLE_BF16\n#include <cuda_bf16.h>\n#endif\n"
    assert summary(scan_files(tmp_path, {"k.cu": text})) == [("cuda_header", "k.cu", 2, "cuda_bf16.h")]


def test_cuda_arch_else_branch_is_what_rocm_compiles(tmp_path):
    # __CUDA_ARCH__ is undefined in HIP passes, so the #else is the ROCm path (FAILURE_CLASSES trap).
    text = "#if __CUDA_ARCH__ >= 800\nint fine = 1;\n#else\n__device__ __nv_bfloat16 slow;\n#endif\n"
    assert summary(scan_files(tmp_path, {"k.cu": text})) == [("bf16_type", "k.cu", 4, "__nv_bfloat16")]


def test_derived_platform_macro_is_followed(tmp_path):
    text = (
        "#if defined(USE_ROCM)\n#define ON_AMD 1\n#else\n#define ON_AMD 0\n#endif\n"
        "#if !ON_AMD\n#include <cuda_fp8.h>\n#endif\n"
    )
    assert scan_files(tmp_path, {"k.cu": text}) == []


def test_identifier_uses_are_grouped_per_file(tmp_path):
    text = (
        "__device__ float f(float v) {\n  v += __shfl_xor_sync(~0u, v, 1);\n  v += __shfl_xor_sync(~0u, v, 2);\n"
        "#ifndef USE_ROCM\n  v += __shfl_xor_sync(~0u, v, 4);\n#endif\n  return v;\n}\n"
    )
    findings = scan_files(tmp_path, {"k.cu": text})
    assert summary(findings) == [("warp_intrinsic", "k.cu", 2, "__shfl_xor_sync")]
    assert findings[0].facts["lines"] == [2, 3] and findings[0].facts["occurrences"] == 2


@pytest.mark.parametrize(
    "text",
    [
        "int n = size % 32;",  # a size, not a lane
        "for (int i = 0; i < 32; ++i) acc += x[i];",  # a trip count
        "float table[32];",  # not __shared__, no warp context
        "int blocks = (n + 31) / 32;",  # grid arithmetic
        "uint32_t bits = value >> 5;",  # not a thread index
        "if (x == 0xffffffff) return;",  # a sentinel, not a mask
        'asm volatile("" ::: "memory");',  # compiler barrier: valid on AMD
        "int v = __ldg(ptr);",  # HIP provides __ldg
        '#include <thrust/sort.h>\n#include "cuda_utils.h"',  # rocThrust / a project header
    ],
)
def test_unrelated_constructs_are_not_reported(tmp_path, text):
    assert scan_files(tmp_path, {"k.cu": f"{text}\n"}) == []


def test_tensor_core_ptx_is_marked_as_judgment(tmp_path):
    text = 'asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\\n" : "=r"(a));\n'
    (finding,) = scan_files(tmp_path, {"k.cu": text})
    assert finding.facts["judgment"] is True and finding.symbol.startswith("ldmatrix")


def test_const_warpsize_search_reports_what_the_whole_file_pattern_does():
    """The windowed search (speed) and one finditer over the file give the same offsets."""
    import random

    from tools.scan.warp_size import _CONST_WARPSIZE, const_warpsize_uses

    pieces = ["constexpr", "static_assert", " ", "\t", "\n", "warpSize", "kwarpSize", "warpSizeX", ";", "{"]
    pieces += ["<", ">", ",", "(", ")", "=", "x", "_", "\u00a0"]
    rng = random.Random(15)
    for _ in range(20000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randrange(1, 14)))
        whole = [
            m.start("lit") if m.group("lit") else m.start("targ") for m in _CONST_WARPSIZE.finditer(text)
        ]
        assert list(const_warpsize_uses(text)) == whole, repr(text)


def test_shared_array_search_finds_what_the_pattern_finds_everywhere():
    """The `__shared__ T name[32]` detector tries its pattern only where a statement holds a 32:
    the same matches as the pattern run over the whole text."""
    rng = random.Random(3)
    pieces = [
        "__shared__",
        " float",
        " warp_buf",
        "[32]",
        "[ 32 ]",
        "[64]",
        ";",
        "\n",
        " x",
        ",",
        "32",
        "_",
        "[",
        "]",
    ]
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randrange(0, 14)))
        expected = [(m.span(), m.group("name")) for m in _SHARED_32.finditer(text)]
        thirty_twos = words_with_regex(text, ("32",)).get("32", [])
        assert [(m.span(), m.group("name")) for m in shared_per_warp_arrays(text, thirty_twos)] == expected
