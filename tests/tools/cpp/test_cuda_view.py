"""The CUDA view of a file (tools/cpp/cuda_view): what nvcc reads, found from the text. Equal views must
mean equal CUDA tokens; anything the walk cannot be sure of must come out unequal (nvcc then decides)."""

from tools.cpp.cuda_view import cuda_view, same_for_cuda

ROCM = frozenset({"USE_ROCM", "__HIP_PLATFORM_AMD__"})
KERNEL = "// license\n#include <cuda_runtime.h>\n#include <cuda_fp16.h>\n\n__global__ void k(int* x) { x[0] = 1; }\n"


def _guarded(body: str = "#include <hip/hip_runtime.h>\n") -> str:
    return KERNEL.replace(
        "#include <cuda_runtime.h>\n#include <cuda_fp16.h>\n",
        f"#ifdef USE_ROCM\n{body}#else\n#include <cuda_runtime.h>\n#include <cuda_fp16.h>\n#endif\n",
    )


def test_a_header_guard_leaves_what_cuda_reads_unchanged():
    assert same_for_cuda(KERNEL, _guarded(), ROCM)
    assert same_for_cuda(
        KERNEL,
        KERNEL.replace("#include <cuda_fp16.h>\n", "#ifndef USE_ROCM\n#include <cuda_fp16.h>\n#endif\n"),
        ROCM,
    )
    # the other ROCm spellings and `#if defined(...) || ...` decide too
    both = _guarded().replace("#ifdef USE_ROCM", "#if defined(USE_ROCM) || defined(__HIP_PLATFORM_AMD__)")
    assert same_for_cuda(KERNEL, both, ROCM)


def test_a_changed_cuda_line_is_seen():
    assert not same_for_cuda(KERNEL, KERNEL.replace("x[0] = 1", "x[0] = 2"), ROCM)
    assert not same_for_cuda(
        KERNEL, _guarded().replace("#else\n#include <cuda_runtime.h>", "#else\n#include <cuda.h>"), ROCM
    )
    # a new line outside the guard, even a macro nobody uses, is a change nvcc reads
    assert not same_for_cuda(KERNEL, KERNEL + "#define UNUSED 1\n", ROCM)


def test_a_comment_opened_in_the_rocm_branch_that_swallows_cuda_lines_is_a_change():
    swallow = _guarded("/* unterminated\n")
    assert not same_for_cuda(KERNEL, swallow, ROCM)


def test_a_guard_spliced_into_a_continued_line_is_not_a_guard():
    macro = "#define TWO 1 \\\n  + 1\nint x = TWO;\n"
    spliced = "#define TWO 1 \\\n#ifdef USE_ROCM\n#endif\n  + 1\nint x = TWO;\n"
    assert not same_for_cuda(macro, spliced, ROCM)


def test_groups_other_macros_decide_are_compared_as_text():
    arch = "#if __CUDA_ARCH__ >= 800\nint a;\n#else\nint b;\n#endif\n"
    assert same_for_cuda(
        arch, arch.replace("int a;\n", "#ifdef USE_ROCM\nint r;\n#else\nint a;\n#endif\n"), ROCM
    )
    assert not same_for_cuda(arch, arch.replace("int b;", "int c;"), ROCM)  # the other branch CUDA may read


def test_what_the_walk_cannot_decide_is_never_called_the_same():
    # an #elif the known macros cannot decide, after a branch they decided false
    elif_ = _guarded().replace("#else\n", "#elif defined(SOMETHING)\n#else\n")
    assert cuda_view(elif_, ROCM) is None and not same_for_cuda(KERNEL, elif_, ROCM)
    assert cuda_view("#endif\n", ROCM) is None  # unbalanced
    assert cuda_view("#ifdef USE_ROCM\nint x;\n", ROCM) is None
    # without a macro known to be undefined for CUDA there is nothing to prove with
    assert not same_for_cuda(KERNEL, _guarded(), frozenset())
    assert not same_for_cuda(KERNEL, _guarded(), frozenset({"__HIP_PLATFORM_AMD__"}))


def test_groups_inside_a_skipped_branch_do_not_flip_it():
    nested = _guarded("#if FOO\nint a;\n#else\nint b;\n#endif\n")
    assert same_for_cuda(KERNEL, nested, ROCM)
    assert cuda_view(nested, ROCM) == cuda_view(KERNEL, ROCM)


def test_comments_and_blank_lines_are_not_lines_cuda_reads():
    assert same_for_cuda(
        KERNEL, KERNEL.replace("// license\n", "// license\n/* a note\n   over lines */\n\n"), ROCM
    )
