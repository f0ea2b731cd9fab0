"""Compiler output details: warnings, notes, chains, driver errors, excerpt bounds."""

from __future__ import annotations

from tools.diagnose import diagnose_text


def test_warnings_and_their_notes_are_ignored_unless_werror():
    log = """\
csrc/a.cu:3:9: warning: unused variable 'x' [-Wunused-variable]
    3 |     int x;
      |         ^
csrc/a.cu:1:1: note: in instantiation of function template specialization 'f<int>' requested here
csrc/b.cu(12): warning #177-D: variable "y" was declared but never referenced
csrc/c.cu:5:9: error: unused variable 'z' [-Werror,-Wunused-variable]
    5 |     int z;
      |         ^
"""
    failures = diagnose_text(log)
    assert [(f.kind, f.file, f.line, f.symbol) for f in failures] == [("compile_error", "csrc/c.cu", 5, "z")]


def test_notes_fold_into_their_error_and_excerpt_is_bounded():
    notes = "".join(
        f"csrc/k.cu:{i}:3: note: candidate template ignored: could not match 'T{i}'\n" for i in range(200)
    )
    log = (
        "csrc/k.cu:40:5: error: no matching function for call to 'reduce'\n"
        "   40 |     reduce(x);\n      |     ^~~~~~\n"
        + notes
        + "1 error generated when compiling for gfx90a.\n"
    )
    (failure,) = diagnose_text(log)
    assert failure.kind == "compile_error" and failure.symbol == "reduce"
    lines = failure.excerpt.splitlines()
    assert lines[0].startswith("csrc/k.cu:40:5: error") and "reduce(x);" in lines[1]
    assert 3 < len(lines) <= 30


def test_gcc_include_chain_names_the_unit_last():
    log = """\
In file included from csrc/cpu/utils.h:4,
                 from csrc/cpu/vec.h:2,
                 from csrc/cpu/shm.cpp:2:
csrc/cpu/cuda_shim.h:1:10: fatal error: cuda_runtime.h: No such file or directory
    1 | #include <cuda_runtime.h>
      |          ^~~~~~~~~~~~~~~~
compilation terminated.
"""
    (failure,) = diagnose_text(log)
    assert (failure.kind, failure.file, failure.symbol, failure.source) == (
        "cuda_header",
        "csrc/cpu/cuda_shim.h",
        "cuda_runtime.h",
        "gcc",
    )
    assert failure.facts["unit"] == "csrc/cpu/shm.cpp"
    assert failure.excerpt.count("from ") == 3


def test_math_constants_and_vector_functions_are_cuda_headers_on_rocm():
    for header in ("math_constants.h", "vector_functions.h"):  # rules map them now
        log = f"csrc/k.cu:2:10: fatal error: '{header}' file not found\n#include <{header}>\n"
        (failure,) = diagnose_text(log)
        assert (failure.kind, failure.symbol) == ("cuda_header", header)


def test_cucomplex_and_cuda_internal_headers_are_cuda_headers_on_rocm():
    """hipcc's `file not found` for cuComplex.h or a part of cuda_runtime.h (device_atomic_functions.h,
    sm_32_intrinsics.h) goes to the header rules, not to a plain compile_error nothing answers."""
    for header in ("cuComplex.h", "device_atomic_functions.h", "sm_32_intrinsics.hpp", "host_defines.h"):
        log = f"csrc/k.cu:2:10: fatal error: '{header}' file not found\n#include <{header}>\n"
        (failure,) = diagnose_text(log)
        assert (failure.kind, failure.symbol) == ("cuda_header", header)


def test_driver_errors_are_environment_failures():
    log = """\
clang++: error: cannot find ROCm device library for gfx950; provide its path via '--rocm-path' or '--rocm-device-lib-path', or pass '-nogpulib' to build without ROCm device library
clang-15: error: unsupported CUDA gpu architecture: gfx950
nvcc fatal   : Unsupported gpu architecture 'compute_120'
"""  # noqa: E501 (a verbatim log: its lines are as long as the tool wrote them)
    failures = diagnose_text(log)
    assert [(f.kind, f.symbol) for f in failures] == [
        ("toolchain", None),
        ("arch_unsupported", "gfx950"),
        ("arch_unsupported", "compute_120"),
    ]


def test_interleaved_units_keep_their_own_unit():
    log = """\
In file included from /r/csrc/a.cu:2:
/r/csrc/common.cuh:7:3: error: use of undeclared identifier '__syncwarp'
    7 |   __syncwarp();
      |   ^
/r/csrc/b.cu:9:3: error: use of undeclared identifier '__activemask'
    9 |   __activemask();
      |   ^
In file included from /r/csrc/c.cu:1:
/r/csrc/common.cuh:7:3: error: use of undeclared identifier '__syncwarp'
    7 |   __syncwarp();
      |   ^
"""
    failures = diagnose_text(log)
    assert [(f.kind, f.symbol, f.facts.get("unit")) for f in failures] == [
        ("warp_intrinsic", "__syncwarp", "/r/csrc/a.cu"),
        ("warp_intrinsic", "__activemask", "/r/csrc/b.cu"),
    ]
    assert failures[0].facts["units"] == ["/r/csrc/a.cu", "/r/csrc/c.cu"]


def test_docker_and_ci_prefixes_and_colours_are_peeled():
    log = (
        "2024-05-01T12:00:00.123456789Z \x1b[1m/r/csrc/x.cu:3:1: \x1b[0;1;31merror: \x1b[0m"
        "\x1b[1munknown type name '__nv_fp8_e4m3'\x1b[0m\n"
        "#12 34.56 /r/csrc/y.cu:4:1: error: use of undeclared identifier '__ldcs'\n"
    )
    failures = diagnose_text(log)
    assert [(f.kind, f.file, f.symbol) for f in failures] == [
        ("fp8_type", "/r/csrc/x.cu", "__nv_fp8_e4m3"),
        ("warp_intrinsic", "/r/csrc/y.cu", "__ldcs"),
    ]


def test_one_error_per_offload_arch_is_one_failure_with_every_target():
    block = (
        "/r/csrc/q.cu:5:3: error: unknown type name '__nv_fp8_e4m3'\n    5 |   __nv_fp8_e4m3 v;\n      |   ^\n"
        "1 error generated when compiling for {arch}.\n"
    )
    failures = diagnose_text(block.format(arch="gfx942") + block.format(arch="gfx950"))
    assert len(failures) == 1
    assert failures[0].facts["target"] == "gfx942"
    assert failures[0].facts["targets"] == ["gfx942", "gfx950"]


def test_a_template_missing_from_a_named_namespace_is_that_library_s_failure():
    """hipcc's 'no template named X in namespace hipcub' is a cub gap (with its rule's decline), not a
    generic compile error that no rule looks at."""
    log = (
        "flashinfer/mamba/seq_chunk_cumsum.cuh:101:10: error: no template named 'ScanTileState' in namespace "
        "'hipcub'\n"
        "csrc/plain.cu:7:3: error: no template named 'Vec'\n"
    )
    failures = diagnose_text(log)
    assert [(f.kind, f.symbol) for f in failures] == [
        ("cub", "hipcub::ScanTileState"),
        ("compile_error", "Vec"),
    ]
