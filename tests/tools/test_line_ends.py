"""tools/line_ends.py through tools/patching.py: a diff written with LF ends patches a CRLF source, and the
source keeps its own line ends (CRLF stays CRLF, LF lines of a mixed file stay LF); revert restores its bytes."""

from __future__ import annotations

import subprocess

from agent.proposers.rules.base import file_diff
from tools.patching import apply_diff, can_apply, preview, revert_diff

GUARDED = "#ifdef USE_ROCM\n#include <hip/hip_runtime.h>\n#else\n#include <cuda_runtime.h>\n#endif\n"
SOURCE = "// BitDepth-like source\n#include <cuda_runtime.h>\n#include <stdint.h>\n\n__global__ void k() {}\n"


def _crlf(text: str) -> bytes:
    return text.replace("\n", "\r\n").encode()


def _repo_with(git_repo, rel: str, data: bytes):
    root = git_repo({"README": "x\n"})
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_bytes(data)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "crlf"], cwd=root, check=True
    )
    return root


def _status(root) -> str:
    return subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True).stdout


def test_an_lf_diff_patches_a_crlf_source_and_every_line_stays_crlf(git_repo):
    root = _repo_with(git_repo, "Utils/BitDepth.cu", _crlf(SOURCE))
    new = SOURCE.replace("#include <cuda_runtime.h>\n", GUARDED)
    diff = file_diff("Utils/BitDepth.cu", SOURCE, new)  # what a rule writes: it reads text as LF
    assert "\r" not in diff and can_apply(root, diff)
    apply_diff(root, diff)
    assert (root / "Utils/BitDepth.cu").read_bytes() == _crlf(new)  # the added lines too end in CRLF
    assert preview(root, file_diff("Utils/BitDepth.cu", new, SOURCE), ["Utils/BitDepth.cu"])
    revert_diff(root, diff)
    assert (root / "Utils/BitDepth.cu").read_bytes() == _crlf(SOURCE) and _status(root) == ""


def test_a_mixed_file_keeps_each_lines_own_end_and_added_lines_take_the_common_one(git_repo):
    text = "// a\r\n#include <cuda_runtime.h>\r\nint lf_line;\n// b\r\n// c\r\n"
    root = _repo_with(git_repo, "k.cu", text.encode())
    lf = text.replace("\r\n", "\n")
    diff = file_diff("k.cu", lf, lf.replace("#include <cuda_runtime.h>\n", GUARDED))
    apply_diff(root, diff)
    want = "// a\r\n" + GUARDED.replace("\n", "\r\n") + "int lf_line;\n// b\r\n// c\r\n"
    assert (root / "k.cu").read_bytes() == want.encode()
    revert_diff(root, diff)
    assert (root / "k.cu").read_bytes() == text.encode()


def test_a_crlf_file_without_a_final_line_end_keeps_it_so(git_repo):
    text = "#include <cuda_runtime.h>\r\n__global__ void k() {}"
    root = _repo_with(git_repo, "k.cu", text.encode())
    lf = text.replace("\r\n", "\n")
    diff = file_diff("k.cu", lf, lf.replace("#include <cuda_runtime.h>\n", GUARDED) + "\n// end")
    apply_diff(root, diff)
    assert (root / "k.cu").read_bytes() == (GUARDED + "__global__ void k() {}\n// end").replace(
        "\n", "\r\n"
    ).encode()


def test_lf_files_and_new_files_are_patched_as_before(git_repo):
    root = git_repo({"k.cu": SOURCE})
    diff = file_diff("k.cu", SOURCE, SOURCE.replace("#include <cuda_runtime.h>\n", GUARDED))
    diff += file_diff("compat.h", None, "#pragma once\n")
    apply_diff(root, diff)
    assert b"\r" not in (root / "k.cu").read_bytes() + (root / "compat.h").read_bytes()


def test_a_removed_line_that_reads_like_a_file_header_stays_in_its_hunk(git_repo):
    text = "-- not a header\r\nint a;\r\n"
    root = _repo_with(git_repo, "k.h", text.encode())
    lf = text.replace("\r\n", "\n")
    diff = file_diff("k.h", lf, "int a;\n")  # removes the line `-- not a header`, written `--- not a header`
    assert "\n--- not a header\n" in diff
    apply_diff(root, diff)
    assert (root / "k.h").read_bytes() == b"int a;\r\n"
