"""Log shapes people paste into issue threads, each diagnosed like the raw log would be.

The inputs are small, in the shapes found in the real-world corpus (tests/tools/diagnose/real/);
the names and paths are ours.
"""

from __future__ import annotations

from tools.diagnose import diagnose_text

CLANG_ERROR = "/src/proj/csrc/topk.cu:12:3: error: use of undeclared identifier '__shfl_xor_sync'"


def _top(log: str, repo=None):
    failures = diagnose_text(log, repo_root=repo)
    assert failures, log
    return failures[0]


def test_markdown_quotes_fences_and_bold_are_peeled():
    for log in (
        f"> {CLANG_ERROR}",
        f"```\n{CLANG_ERROR}\n```",
        f"`{CLANG_ERROR}`",
        f"> > {CLANG_ERROR}",
        "> src/x.h:33:23: **fatal error: cub/cub.cuh: No such file or directory**",
    ):
        failure = _top(log)
        assert failure.kind in ("warp_intrinsic", "cub"), log


def test_logger_prefixes_of_servers_ci_and_system_logs_are_peeled():
    message = "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB."
    for prefix in (
        "2026-05-08 11:47:02.257 [Error] (Process) (EngineCore_DP0 pid=2651) ",
        "Jul 28 15:11:48 node1 vllm[3074]: ",
        "E1028 18:10:24.124692 140650719580480 xla_bridge.py:487] ",
        "[16:10:33] stdout/INFO  ",
        "2.700 ",
        "[hipDNN] ",
        "ERROR 07-04 14:53:23 [engine.py:458] ",
    ):
        failure = _top(prefix + message)
        assert (failure.kind, failure.symbol) == ("resource", "HIP out of memory"), prefix


def test_json_lines_records_and_lost_newlines_are_split_back():
    record = (
        '{"event": "line", "data": "Callback: Queue aborting with error : HSA_STATUS_ERROR_EXCEPTION: x\\n"}'
    )
    assert _top(record).symbol == "HSA_STATUS_ERROR_EXCEPTION"
    flattened = (
        'x.py:1] start ERROR 02-21 11:17:10 registry.py:321]   File "/usr/lib/python3/dist-packages/'
        'vllm/attention/fa.py", line 25, in <module> ERROR 02-21 11:17:10 registry.py:321]     from '
        "vllm.vllm_flash_attn import f ERROR 02-21 11:17:10 registry.py:321] ImportError: cannot import name "
        "'f' from 'vllm.vllm_flash_attn' (unknown location)"
    )
    failure = _top(flattened)
    assert (failure.kind, failure.file, failure.symbol) == (
        "cuda_only_dep",
        "vllm/attention/fa.py",
        "vllm.vllm_flash_attn",
    )


def test_ninja_failed_with_the_error_on_the_same_line():
    failure = _top(f"FAILED: csrc/CMakeFiles/k.dir/topk.cu.o {CLANG_ERROR}")
    assert (failure.kind, failure.symbol, failure.facts["unit"]) == (
        "warp_intrinsic",
        "__shfl_xor_sync",
        "csrc/topk.cu",
    )


def test_terminal_wrapped_clang_message_is_joined():
    log = (
        "  /tmp/pip-wheel-x/third_party/ck/include/ck/pipeline_policy_hip.hpp:734:13: "
        "error: static assertion failed due t\n"
        "o requirement 'kKPack % K3 == 0'\n"
        "              static_assert(kKPack % K3 == 0);\n"
    )
    failure = _top(log)
    assert "due to requirement 'kKPack % K3 == 0'" in failure.message
    assert failure.kind == "arch_unsupported"


def test_bare_llvm_backend_errors_name_the_kernel():
    for log in (
        "error: local memory limit exceeded (98304) in _Z17symm_scale_kernelILi128EEvv",
        "ld.lld: error: local memory (119344) exceeds limit (65536) in function '_Z17symm_scale_kernelILi128EEvv'",
    ):
        failure = _top(log)
        assert (failure.kind, failure.symbol) == ("launch_bounds_smem", "_Z17symm_scale_kernelILi128EEvv"), (
            log
        )


def test_tracebacks_with_blank_lines_without_header_or_type_prefix(git_repo):
    repo = git_repo({"server/loader.py": "", "webui/app.py": ""})
    blank_lines = (
        'Traceback (most recent call last):\n\n  File "/opt/x/server/loader.py", line 8, in load\n\n'
        "    import flash_attn\n\nModuleNotFoundError: No module named 'flash_attn'\n"
    )
    assert (_top(blank_lines, repo).kind, _top(blank_lines, repo).file) == (
        "cuda_only_dep",
        "server/loader.py",
    )
    headerless = (
        '  File "/opt/x/server/loader.py", line 9, in load\n    param = params_dict[name]\n'
        "KeyError: 'model.layers.3.mlp.gate_up_proj.weight_scale'\n"
    )
    assert (_top(headerless, repo).kind, _top(headerless, repo).file) == ("weight_name", "server/loader.py")
    untyped = (
        'Traceback (most recent call last):\n  File "E:\\\\ai\\\\pack\\\\webui\\\\app.py", line 51, in <module>\n'
        "    tok = Tokenizer.from_file(path)\n"
        "data did not match any variant of untagged enum ModelWrapper at line 1251019 column 3\n"
    )
    failure = _top(untyped, repo)
    assert (failure.kind, failure.file, failure.symbol) == ("tokenizer", "webui/app.py", "ModelWrapper")


def test_frames_after_the_message_locate_it(git_repo):
    repo = git_repo({"nodes/enhance.py": ""})
    log = (
        "Error occurred when executing Enhance:\n\n"
        "data did not match any variant of untagged enum PyPreTokenizerTypeWrapper at line 951 column 3\n\n"
        'File "F:\\\\ComfyUI\\\\execution.py", line 283, in execute\nobj = class_def()\n'
        'File "F:\\\\ComfyUI\\\\custom_nodes\\\\x\\\\nodes\\\\enhance.py", line 8, in __init__\n'
    )
    failure = _top(log, repo)
    assert (failure.kind, failure.file, failure.line) == ("tokenizer", "nodes/enhance.py", 8)


def test_rocm_header_errors_name_the_repo_file_and_keep_header_and_version(git_repo):
    repo = git_repo({"csrc/kernels.hip": ""})
    log = (
        "In file included from {root}/csrc/kernels.hip:11:\n"
        "In file included from /opt/rocm-{v}/lib/llvm/bin/../../../include/hipcub/hipcub.hpp:31:\n"
        "/opt/rocm-{v}/lib/llvm/bin/../../../include/rocprim/device/../config.hpp:69:6: "
        'error: "rocPRIM requires at least C++17"\n'
    )
    old, new = (
        _top(log.format(root=root, v=v), repo) for root, v in ((repo, "6.4.1"), ("/build/x", "7.0.0"))
    )
    assert (new.kind, new.file, new.symbol) == ("build_config", "csrc/kernels.hip", None)
    assert new.facts["header"] == "/opt/rocm/include/rocprim/config.hpp"
    assert (old.facts["rocm_version"], new.facts["rocm_version"]) == ("6.4.1", "7.0.0")
    assert old.signature == new.signature


def test_hipified_and_installed_copies_map_back_to_the_source(git_repo):
    repo = git_repo(
        {"csrc/mlp_cuda.cu": "", "c10/cuda/CUDAGraphsUtils.h": "", "python/pkg/srt/loader.py": ""}
    )
    hipified = _top("/w/apex/csrc/mlp_hip.hip:65:53: error: unknown type name 'hipblasOperation_t'", repo)
    assert (hipified.kind, hipified.file) == ("cublas", "csrc/mlp_cuda.cu")
    graphs = _top(
        "../c10/hip/HIPGraphsUtils.h:85:7: error: use of undeclared identifier 'cudaStreamIsCapturing'", repo
    )
    assert (graphs.kind, graphs.file, graphs.symbol) == (
        "cuda_api",
        "c10/cuda/CUDAGraphsUtils.h",
        "cudaStreamIsCapturing",
    )
    installed = (
        'Traceback (most recent call last):\n  File "/usr/lib/python3/site-packages/pkg/srt/loader.py", '
        "line 3, in <module>\n    import deep_gemm\nModuleNotFoundError: No module named 'deep_gemm'\n"
    )
    assert _top(installed, repo).file == "python/pkg/srt/loader.py"


def test_kind_rules_for_messages_real_ports_hit():
    cases = {
        "OSError: CUDA_HOME environment variable is not set. Please set it to your CUDA install root.": (
            "build_config",
            "CUDA_HOME",
        ),
        "ImportError: libcudart.so.12: cannot open shared object file: No such file or directory": (
            "cuda_only_dep",
            "libcudart.so.12",
        ),
        "OSError: libhsa-runtime64.so.1: cannot open shared object file: No such file or directory": (
            "hip_runtime",
            "libhsa-runtime64.so.1",
        ),
        "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0.": (
            "unsupported_dtype",
            "bfloat16",
        ),
        "RuntimeError: CUDA error: HIPBLAS_STATUS_NOT_SUPPORTED when calling hipblasLtMatmul for float8_e4m3fn": (
            "fp8_layout",
            "HIPBLAS_STATUS_NOT_SUPPORTED",
        ),
        "ld.lld: error: undefined symbol: ncclCommInitRankMulti": ("nccl_symbol", "ncclCommInitRankMulti"),
        "nccl.obj : error LNK2001: unresolved external symbol ncclCommInitRank": (
            "nccl_symbol",
            "ncclCommInitRank",
        ),
        "Exception: data did not match any variant of untagged enum ModelWrapper at line 1 column 3": (
            "tokenizer",
            "ModelWrapper",
        ),
        "ModuleNotFoundError: No module named 'vllm.vllm_flash_attn.layers'": (
            "cuda_only_dep",
            "vllm.vllm_flash_attn",
        ),
        (
            "rocBLAS error: Cannot read /opt/rocm-6.2.0/lib/rocblas/library/TensileLibrary.dat: "
            "No such file or directory"
        ): (
            "hip_runtime",
            "TensileLibrary.dat",
        ),
        "error: no viable conversion from returned value of type '__half' to function return type 'fp16_t'": (
            "fp16_type",
            "__half",
        ),
    }
    for line, want in cases.items():
        failure = _top(line)
        assert (failure.kind, failure.symbol) == want, line


def test_cmake_cuda_branch_and_composable_kernel_arch_gates():
    cmake = (
        "CMake Error at /usr/share/cmake/Modules/CMakeDetermineCUDACompiler.cmake:180 (message):\n"
        "  Failed to find nvcc.\nCall Stack (most recent call first):\n  CMakeLists.txt:66 (enable_language)\n"
    )
    assert (_top(cmake).kind, _top(cmake).file, _top(cmake).symbol) == (
        "build_config",
        "CMakeLists.txt",
        "nvcc",
    )
    ck = (
        "/src/fa/csrc/composable_kernel/include/ck_tile/core/arch/atomic_hip.hpp:66:19: error: static assertion "
        "failed due to requirement 'std::is_same<_Float16, int>::value': wrong! not implemented\n"
        "1 error generated when compiling for gfx1100.\n"
    )
    assert (_top(ck).kind, _top(ck).symbol) == ("arch_unsupported", "gfx1100")
