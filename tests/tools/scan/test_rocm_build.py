"""The ROCm build's own view: its source list splits findings into real blockers and not-built files."""

from __future__ import annotations

import random
import re
from pathlib import Path

import yaml

from agent.profiles import Profile, load_profile
from tests.tools.scan.helpers import scan_files, summary, write
from tools.scan import scan_report
from tools.scan.build_lists import _TOKEN, _commands, cmake_sources, setup_py_sources

CMAKE = """
cmake_minimum_required(VERSION 3.26)
# A comment with "a quote and (parens
set(EXT_SRC "csrc/common.cu" "csrc/lanes.cu")
if(GPU_LANG STREQUAL "CUDA")
  list(APPEND EXT_SRC "csrc/cutlass_gemm.cu")
endif()
if(GPU_LANG STREQUAL "HIP")
  list(APPEND EXT_SRC "csrc/rocm/attention.cu")
  if(GPU_ARCHES MATCHES "gfx942")
    list(APPEND EXT_SRC "csrc/hip_only_kernel.cu")
  endif()
endif()
define_extension_target(_C SOURCES ${EXT_SRC} LANGUAGE ${GPU_LANG})
"""
LANES = """#include "compat.h"
__global__ void copy(float* out) {
  const int lane = threadIdx.x & 31;   // 32-lane logical groups: fine on a 64-lane wavefront
  const int warp = threadIdx.x >> 5;
  out[warp * 32 + lane] = 0.f;
}
__device__ float reduce(float v) { return __shfl_xor_sync(FULL_MASK, v, 1, 32); }
"""
COMPAT = (
    "#pragma once\n#ifdef USE_ROCM\n#define FULL_MASK 0xffffffffffffffffULL\n"
    "#else\n#define FULL_MASK 0xffffffff\n#endif\n"
)


def profile_file(tmp_path: Path) -> Profile:
    data = yaml.safe_load(Path("agent/profiles/tinyserve.yaml").read_text())
    data["rocm_sources"] = {
        "cmake": "CMakeLists.txt",
        "variables": {"GPU_LANG": "HIP"},
        "cuda_variables": {"GPU_LANG": "CUDA"},
    }
    path = tmp_path / "profile.yaml"
    path.write_text(yaml.safe_dump(data))
    return load_profile(str(path))


def test_cmake_reader_follows_the_hip_branches(tmp_path):
    write(tmp_path, {"CMakeLists.txt": CMAKE})
    assert cmake_sources(tmp_path, "CMakeLists.txt", {"GPU_LANG": "HIP"}) == {
        "csrc/common.cu",
        "csrc/lanes.cu",
        "csrc/rocm/attention.cu",
        "csrc/hip_only_kernel.cu",
    }
    assert "csrc/cutlass_gemm.cu" in cmake_sources(tmp_path, "CMakeLists.txt", {"GPU_LANG": "CUDA"})


def test_setup_py_reader(tmp_path):
    write(
        tmp_path,
        {
            "kernel/setup_rocm.py": 'sources = ["csrc/a.cu", "csrc/b.cpp"]\nother = "README.md"\n',
            "kernel/csrc/a.cu": "",
            "kernel/csrc/b.cpp": "",
        },
    )
    assert setup_py_sources(tmp_path, "kernel/setup_rocm.py") == {"kernel/csrc/a.cu", "kernel/csrc/b.cpp"}


def test_build_list_entries_outside_the_repo_are_left_out_not_an_error(tmp_path):
    """A setup script or CMake glob that names a file above the repo (`../shared/k.cu`, or a symlink
    out of it) lists nothing the scan reads; the scan still reads the rest of the list."""
    repo = tmp_path / "repo"
    write(tmp_path, {"shared/k.cu": "", "repo/csrc/a.cu": "", "repo/csrc/b.cu": ""})
    (repo / "csrc" / "out.cu").symlink_to(tmp_path / "shared" / "k.cu")
    (repo / "setup_rocm.py").write_text('sources = ["csrc/a.cu", "../shared/k.cu", "csrc/out.cu"]\n')
    assert setup_py_sources(repo, "setup_rocm.py") == {"csrc/a.cu"}
    (repo / "CMakeLists.txt").write_text(
        "file(GLOB KS csrc/*.cu ../shared/*.cu)\nset_property(TARGET k SOURCES ${KS})\nadd_library(k ${KS})\n"
    )
    assert cmake_sources(repo, "CMakeLists.txt", {}) == {"csrc/a.cu", "csrc/b.cu", "csrc/out.cu"}


BUILD_TREE = {
    "CMakeLists.txt": CMAKE,
    "csrc/compat.h": COMPAT,
    "csrc/lanes.cu": LANES,
    "csrc/common.cu": "#include <cuda_bf16.h>\n__global__ void k() {}\n",
    "csrc/cutlass_gemm.cu": '#include "cutlass/gemm/device/gemm.h"\n#include "cute/tensor.hpp"\n'
    'asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0}, {%1};");\n',
    "csrc/hip_only_kernel.cu": "__device__ int lane() { return threadIdx.x % 32; }\n",
    "tests/kernel_test.cu": "#include <cuda_fp8.h>\n",
}
"""A CMake-built tree: files its HIP list compiles, one it leaves out, one only it has, a test."""


def test_findings_split_by_the_rocm_build(tmp_path):
    repo = write(tmp_path / "repo", BUILD_TREE)
    report = scan_report(repo / "csrc", profile=profile_file(tmp_path))
    assert summary(report.findings) == [("cuda_header", "common.cu", 1, "cuda_bf16.h")]
    assert [n.path for n in report.not_built] == ["cutlass_gemm.cu"]
    assert report.not_built[0].blockers[:2] == ["CUTLASS", "CuTe"]
    assert report.rocm_only == 1  # hip_only_kernel.cu: only the HIP list has it
    everything = scan_report(repo, profile=profile_file(tmp_path), exclude=())
    assert "tests/kernel_test.cu" in {f.file for f in everything.findings} | {
        n.path for n in everything.not_built
    }
    assert "tests/kernel_test.cu" not in {
        n.path for n in scan_report(repo, profile=profile_file(tmp_path)).not_built
    }


def test_launch_attributes_are_reported_even_when_the_build_hipifies(tmp_path):
    text = "void go(cudaStream_t s) {\n  cudaLaunchConfig_t config;\n  cudaLaunchKernelEx(&config, k);\n}\n"
    found = {f.symbol for f in scan_files(tmp_path, {"k.cu": text}, hipify=True)}
    assert found == {"cudaLaunchConfig_t", "cudaLaunchKernelEx"}


def test_cooperative_groups_and_cub_apis_without_hip_equivalents(tmp_path):
    text = (
        "namespace cg = cooperative_groups;\n__device__ float f(cg::thread_block_tile<32> t, float v) {\n"
        "  return cg::reduce(t, v, cg::greater<float>());\n}\n"
        "__device__ unsigned g(unsigned x) { return cub::Traits<float>::TwiddleIn(x); }\n"
    )
    assert {f.symbol for f in scan_files(tmp_path, {"k.cu": text})} == {
        "cg::reduce",
        "cg::greater",
        "cub::Traits<T>::TwiddleIn",
    }


def test_amd_arm_and_x86_assembly_is_not_ptx(tmp_path):
    text = (
        '__device__ float f(float h) { float r; asm volatile("v_cvt_f32_f16 %0, %1;" : "=v"(r) : "v"(h)); return r; }\n'
        'void spin() { asm volatile("pause"); asm volatile("yield" ::: "memory"); }\n'
        '__device__ void p() { asm volatile("prmt.b32 %0, %1, %2, 0x5410;" : "=r"(a) : "r"(b), "r"(c)); }\n'
    )
    assert [f.symbol for f in scan_files(tmp_path, {"k.cu": text})] == ["prmt.b32"]


def test_host_assembly_that_borrows_ptx_names_is_not_ptx(tmp_path):
    """vLLM's csrc/cpu: x86 in Intel syntax (`mov %0, edx`) and POWER's `or 1,1,1` spin hint share
    names with PTX, whose `mov` and `or` always carry a type (`mov.u32`, `or.b32`)."""
    text = (
        "unsigned long long tsc() {\n"
        "  unsigned int hi, lo;\n"
        '  asm volatile(".intel_syntax noprefix\\n\\tCPUID\\n\\tRDTSCP\\n\\t"\n'
        '               "mov %0, edx\\n\\tmov %1, eax\\n\\t.att_syntax" : "=r"(hi), "=r"(lo) :: "rax");\n'
        "  return (unsigned long long)hi << 32 | lo;\n"
        "}\n"
        'void relax() { __asm__ __volatile__("or 1,1,1"); }\n'
        '__device__ void t() { asm volatile("trap;"); }\n'
        '__device__ unsigned m(unsigned v) { unsigned r; asm("mov.b32 %0, %1;" : "=r"(r) : "r"(v)); return r; }\n'
    )
    assert [f.symbol for f in scan_files(tmp_path, {"shm.cpp": text})] == ["trap", "mov.b32"]


def test_nothing_is_reported_inside_a_rocm_only_region(tmp_path):
    text = (
        "#ifdef USE_ROCM\n__device__ float f(float v) { return __shfl_xor_sync(0xffffffff, v, 1); }\n#endif\n"
    )
    assert scan_files(tmp_path, {"k.cu": text}) == []


def test_runtime_python_is_in_the_build_and_kernel_generators_are_not(tmp_path):
    repo = write(
        tmp_path / "repo",
        {
            "CMakeLists.txt": CMAKE,
            "csrc/common.cu": "__global__ void k() {}\n",
            "csrc/generate.py": "import cutlass_library\n",
            "pkg/layers/router.py": "import deep_gemm\n",
        },
    )
    report = scan_report(repo, profile=profile_file(tmp_path))
    assert summary(report.findings) == [("cuda_only_dep", "pkg/layers/router.py", 1, "deep_gemm")]
    assert [n.path for n in report.not_built] == ["csrc/generate.py"]
    inside = scan_report(repo / "csrc", profile=profile_file(tmp_path))
    assert inside.findings == [] and [n.path for n in inside.not_built] == ["generate.py"]
    package = scan_report(repo / "pkg", profile=profile_file(tmp_path))
    assert summary(package.findings) == [("cuda_only_dep", "layers/router.py", 1, "deep_gemm")]


def test_cmake_commands_are_read_as_one_token_at_a_time_would_read_them():
    """The CMake tokenizer eats blanks inside its match and tries words first; it must give the
    commands that the plain token-by-token pattern gives (strings with escapes, bracket comments,
    unclosed quotes, nested parentheses)."""
    reference = re.compile(r'"(?:[^"\\]|\\.)*"|#\[(=*)\[[\s\S]*?\]\1\]|#[^\n]*|\(|\)|[^\s()"#]+')
    pieces = [*'"\\#[]=() \n\tab;$', "#[[", "]]", "#[=[", "]=]", "${x}", "set", "if", "foo(", ")", '"a b"']
    rng = random.Random(9)
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randrange(0, 30)))
        assert [t for t, _ in _TOKEN.findall(text)] == [m.group(0) for m in reference.finditer(text)], repr(
            text
        )
    assert list(_commands('set(A "x y" #c\n b) # no(\nlist(APPEND A (c))')) == [
        ("set", 'A "x y" b'),
        ("list", "APPEND A ( c )"),
    ]
