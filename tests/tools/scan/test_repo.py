"""Tree-level scanning: compat headers, shims, hipifying profiles, idempotence, bad input."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from agent.profiles import load_profile
from tests.tools.scan.helpers import scan_files, summary, write
from tools.scan import ScanError, scan_file, scan_repo, scan_report

COMPAT = """#pragma once
#ifdef USE_ROCM
#include <hip/hip_runtime.h>
#include <hip/hip_bf16.h>
#define __shfl_xor_sync(mask, var, lane) __shfl_xor((var), (lane), 32)
typedef __hip_bfloat16 __nv_bfloat16;
using cudaStream_t = hipStream_t;
#endif
"""
KERNEL = """#include "compat.h"
__device__ __nv_bfloat16 f(__nv_bfloat16 v) { return __shfl_xor_sync(0xffffffff, v, 1); }
void launch(cudaStream_t s);
"""


def test_names_a_compat_header_defines_for_rocm_are_not_reported(tmp_path):
    findings = scan_files(
        tmp_path,
        {
            "csrc/include/compat.h": COMPAT,
            "csrc/ops/k.cu": KERNEL,
            "csrc/ops/other.cu": KERNEL.replace('#include "compat.h"\n', ""),
        },
    )
    assert sorted(summary(findings)) == [
        ("bf16_type", "csrc/ops/other.cu", 1, "__nv_bfloat16"),
        ("stream_api", "csrc/ops/other.cu", 2, "cudaStream_t"),
        ("warp_intrinsic", "csrc/ops/other.cu", 1, "__shfl_xor_sync"),
    ]


def test_compat_names_are_followed_through_nested_includes(tmp_path):
    files = {
        "csrc/compat.h": COMPAT,
        "csrc/common.cuh": '#pragma once\n#include "compat.h"\n',
        "csrc/k.cu": KERNEL.replace("compat.h", "common.cuh"),
    }
    assert scan_files(tmp_path, files) == []


CUDA_ONLY_HEADER = "#pragma once\n#include <cuda_fp8.h>\n__device__ __nv_fp8_e4m3 q;\n"


def test_a_header_included_only_from_cuda_branches_is_cuda_only(tmp_path):
    files = {
        "csrc/hopper/fp8_impl.cuh": CUDA_ONLY_HEADER,
        "csrc/hopper/chain.cuh": '#pragma once\n#include "fp8_impl.cuh"\n',
        "csrc/k.cu": '#ifndef USE_ROCM\n#include "hopper/chain.cuh"\n#endif\n',
        "csrc/j.cu": '#ifdef USE_ROCM\n#include <hip/hip_runtime.h>\n#else\n#include "hopper/fp8_impl.cuh"\n#endif\n',
    }
    assert scan_files(tmp_path, files) == []


def test_a_header_also_included_for_rocm_is_scanned(tmp_path):
    files = {
        "csrc/fp8_impl.cuh": CUDA_ONLY_HEADER,
        "csrc/k.cu": '#ifndef USE_ROCM\n#include "fp8_impl.cuh"\n#endif\n',
        "csrc/j.cu": '#include "fp8_impl.cuh"\n',
        "csrc/unused.cuh": CUDA_ONLY_HEADER,
    }
    assert sorted(summary(scan_files(tmp_path, files))) == [
        ("cuda_header", "csrc/fp8_impl.cuh", 2, "cuda_fp8.h"),
        ("cuda_header", "csrc/unused.cuh", 2, "cuda_fp8.h"),
        ("fp8_type", "csrc/fp8_impl.cuh", 3, "__nv_fp8_e4m3"),
        ("fp8_type", "csrc/unused.cuh", 3, "__nv_fp8_e4m3"),
    ]


def test_a_project_helper_named_like_cuda_is_not_reported(tmp_path):
    text = (
        "inline void cudaCheckLastError(const char* where) {\n  (void)where;\n}\n"
        'void run() { cudaCheckLastError("run"); }\n'
    )
    assert scan_files(tmp_path, {"csrc/util.cu": text}) == []


def test_a_shim_header_in_the_repo_is_not_a_cuda_header(tmp_path):
    files = {
        "csrc/shim/cuda_bf16.h": "#pragma once\n#include <hip/hip_bf16.h>\n",
        "csrc/k.cu": "#include <cuda_bf16.h>\n",
    }
    assert scan_files(tmp_path, files) == []


def _profile(tmp_path, hipify: bool):
    path = tmp_path / f"profile-{hipify}.yaml"
    path.write_text(
        f"name: p\nhipify_at_build: {str(hipify).lower()}\nbuild:\n  rocm: make\n"
        f"launch:\n  command: serve --port {{port}}\n"
    )
    return load_profile(str(path))


HIPIFY_TREE = {
    "csrc/k.cu": (
        "#include <cuda_runtime.h>\n#include <cuda_bf16.h>\n#include <cuda_fp8.h>\n#include <cub/cub.cuh>\n"
        "#include <cub/warp/warp_reduce.cuh>\n__device__ __nv_bfloat16 f(__nv_bfloat16 v) {\n"
        "  return __shfl_xor_sync(0xffffffff, v, 1);\n}\n__device__ __nv_fp8_e4m3 q;\n"
        "void launch(cudaStream_t s) { cudaGetLastError(); cuTensorMapEncodeTiled(0); }\n"
        "__device__ int lane() { return threadIdx.x & 31; }\n"
    )
}


def test_a_hipifying_profile_hides_only_what_hipify_translates(tmp_path):
    root = write(tmp_path / "repo", HIPIFY_TREE)
    plain = {f.symbol for f in scan_repo(root, profile=_profile(tmp_path, False))}
    hipified = {f.symbol for f in scan_repo(root, profile=_profile(tmp_path, True))}
    translated = {
        "cuda_runtime.h",
        "cuda_bf16.h",
        "cub/cub.cuh",
        "__nv_bfloat16",
        "cudaStream_t",
        "cudaGetLastError",
    }
    assert translated <= plain
    assert plain - hipified == translated
    assert hipified == {
        "cuda_fp8.h",
        "cub/warp/warp_reduce.cuh",
        "__shfl_xor_sync",
        "__nv_fp8_e4m3",
        "cuTensorMapEncodeTiled",
        "& 31",
    }
    assert {f.symbol for f in scan_repo(root, hipify=True)} == hipified


@pytest.mark.parametrize(("name", "hipifies"), [("sglang", True), ("vllm", True), ("tinyserve", False)])
def test_bundled_profiles_by_name(tmp_path, name, hipifies):
    root = write(tmp_path / "repo", HIPIFY_TREE)
    symbols = {f.symbol for f in scan_repo(root, profile=load_profile(name))}
    assert ("cuda_runtime.h" not in symbols) is hipifies
    assert "__shfl_xor_sync" in symbols


def test_results_are_identical_and_sorted_across_runs(tmp_path):
    files = {f"csrc/k{i}.cu": HIPIFY_TREE["csrc/k.cu"] for i in range(3)} | {"m.py": "import deep_gemm\n"}
    root = write(tmp_path / "repo", files)
    first = [f.to_dict() for f in scan_repo(root, jobs=1)]
    second = [f.to_dict() for f in scan_repo(root, jobs=2)]
    assert first == second and len(first) == 3 * 12 + 1
    keys = [(f["file"], f["line"], f["column"]) for f in first]
    assert keys == sorted(keys)
    assert len({f["signature"] for f in first}) == len(first)


def test_signature_survives_unrelated_edits(tmp_path):
    before = scan_files(tmp_path / "a", {"k.cu": "int lane(int tid) { return tid & 31; }\n"})
    after = scan_files(tmp_path / "b", {"k.cu": "// moved down\n\nint lane(int tid) { return tid & 31; }\n"})
    assert [f.signature for f in before] == [f.signature for f in after]
    assert before[0].line == 1 and after[0].line == 3


def test_parallel_workers_match_a_single_process(tmp_path):
    files = {f"csrc/d{i % 7}/k{i}.cu": HIPIFY_TREE["csrc/k.cu"] for i in range(260)}
    root = write(tmp_path / "repo", files)
    assert [f.to_dict() for f in scan_repo(root, jobs=1)] == [f.to_dict() for f in scan_repo(root, jobs=2)]


def test_vendored_directories_are_skipped_unless_asked(tmp_path):
    root = write(tmp_path / "repo", {"third_party/cutlass/k.cu": "#include <cuda_runtime.h>\n"})
    assert scan_repo(root) == []
    assert len(scan_repo(root, include_vendored=True)) == 1


def test_binary_and_non_utf8_files(tmp_path):
    root = write(
        tmp_path / "repo",
        {
            "csrc/blob.cu": b"\x7fELF\x00\x00\x01#include <cuda_runtime.h>\n",
            "csrc/latin1.cu": "// Übersetzt von Jürgen\n#include <cuda_bf16.h>\n".encode("latin-1"),
        },
    )
    report = scan_report(root)
    assert summary(report.findings) == [("cuda_header", "csrc/latin1.cu", 2, "cuda_bf16.h")]
    assert report.skipped == [("csrc/blob.cu", "binary file")]


def _scan_without_root(root) -> tuple[list[str], list[list[str]]]:
    """Scan as an unprivileged user: root reads every directory whatever its mode. The forked child
    keeps the loaded interpreter, so it needs no access to root's Python install."""
    if os.geteuid() != 0:
        report = scan_report(root, jobs=1)
        return [f.file for f in report.findings], [list(s) for s in report.skipped]
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: drop to nobody, scan, report through the pipe
        code = 1
        try:
            os.close(read_end)
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            report = scan_report(root, jobs=1)
            payload = {"files": [f.file for f in report.findings], "skipped": report.skipped}
            os.write(write_end, json.dumps(payload).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as fh:
        data = fh.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    payload = json.loads(data)
    return payload["files"], payload["skipped"]


def test_unreadable_directory_is_reported():
    base = Path(tempfile.mkdtemp(prefix="rocport-scan-perm-"))
    try:
        base.chmod(0o755)
        root = write(base / "repo", {"ok/k.cu": "#include <cuda.h>\n", "locked/k.cu": "#include <cuda.h>\n"})
        for d in (base / "repo", root / "ok"):
            d.chmod(0o755)
        (root / "ok" / "k.cu").chmod(0o644)
        (root / "locked").chmod(0)
        files, skipped = _scan_without_root(root)
    finally:
        (base / "repo" / "locked").chmod(0o755)
        shutil.rmtree(base)
    assert files == ["ok/k.cu"]
    assert skipped[0][0] == "locked" and "unreadable directory: Permission denied" in skipped[0][1]


def test_unreadable_file_is_reported(tmp_path):
    root = write(tmp_path / "repo", {"k.cu": "#include <cuda.h>\n"})
    (root / "gone.cu").symlink_to(root / "missing.cu")
    report = scan_report(root)
    assert ("gone.cu", "unreadable: No such file or directory") in report.skipped


def test_symlink_out_of_the_tree_is_not_followed(tmp_path):
    outside = write(tmp_path / "outside", {"secret.cu": "#include <cuda.h>\n"})
    root = write(tmp_path / "repo", {"k.py": "x = 1\n"})
    (root / "link.cu").symlink_to(outside / "secret.cu")
    assert scan_repo(root) == []


def test_nonexistent_path_is_a_scan_error(tmp_path):
    with pytest.raises(ScanError, match="no such file or directory"):
        scan_repo(tmp_path / "nope")


def test_scan_file_scans_one_file(tmp_path):
    root = write(tmp_path / "repo", {"k.cuh": "#include <cub/cub.cuh>\n"})
    assert summary(scan_file(root / "k.cuh")) == [("cub", "k.cuh", 1, "cub/cub.cuh")]
    nested = write(root, {"csrc/ops/k.cu": "#include <cuda_fp8.h>\n"}) / "csrc/ops/k.cu"
    assert summary(scan_file(nested, root=root)) == [("cuda_header", "csrc/ops/k.cu", 1, "cuda_fp8.h")]
    with pytest.raises(ScanError, match="is not inside"):
        scan_file(nested, root=tmp_path / "elsewhere")
    with pytest.raises(ScanError, match="not a file"):
        scan_file(root)


def test_cached_results_match_a_fresh_scan_and_a_broken_cache_is_ignored(tmp_path):
    root = write(
        tmp_path / "repo",
        {
            "csrc/compat.h": "#pragma once\n#ifdef USE_ROCM\n#define HAS_X2 1\n#else\n#define HAS_X2 0\n#endif\n",
            "csrc/k.cu": '#include "compat.h"\n#if HAS_X2\nint a;\n#else\n#include <cuda_fp8.h>\n#endif\n'
            "__global__ void k() { __syncwarp(); }\n",
        },
    )
    cache = tmp_path / "cache"
    fresh = summary(scan_repo(root))
    assert summary(scan_report(root, cache_dir=cache).findings) == fresh
    assert summary(scan_report(root, cache_dir=cache).findings) == fresh  # from the cache
    (stored,) = cache.iterdir()
    stored.write_bytes(b"not a cache")
    assert summary(scan_report(root, cache_dir=cache).findings) == fresh
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache directory would go")
    assert summary(scan_report(root, cache_dir=blocked).findings) == fresh
