"""agent/patch/identity.py: the CUDA -E identity compares digests first and tokens only when they differ."""

from __future__ import annotations

from pathlib import Path

from agent.patch.identity import CudaIdentity, CudaText
from agent.patch.toolchains import Toolchains
from sandboxes.local import LocalSandbox

BEFORE = '# 1 "k.cu"\nint x = f(1, 2);\n# 7 "k.cu" 2\nconst char* s = "a  b";\n'


def _checks(tmp_path: Path, old: str, new: str):
    identity = CudaIdentity(tmp_path, Toolchains(hip=LocalSandbox(tmp_path)))
    return identity.checks({"k.cu": CudaText.of(old)}, {"k.cu": CudaText.of(new)})


def test_moved_lines_are_identical_without_tokenizing(tmp_path: Path):
    # a guard added above: blank lines and other line markers, the same code
    after = '# 1 "k.cu"\n\n\n\n#line 9 "k.cu"\nint x = f(1, 2);\n\n# 12 "k.cu" 2\nconst char* s = "a  b";\n'
    old, new = CudaText.of(BEFORE), CudaText.of(after)
    assert old.digest == new.digest
    [check] = _checks(tmp_path, BEFORE, after)
    assert check.ok and "identical" in check.detail


def test_respaced_code_is_identical_by_its_tokens_and_changed_code_is_not(tmp_path: Path):
    respaced = BEFORE.replace("f(1, 2)", "f( 1,2 )")
    assert CudaText.of(BEFORE).digest != CudaText.of(respaced).digest
    assert _checks(tmp_path, BEFORE, respaced)[0].ok
    [inside_string] = _checks(tmp_path, BEFORE, BEFORE.replace('"a  b"', '"a b"'))
    assert not inside_string.ok and "changed" in inside_string.detail
    [changed] = _checks(tmp_path, BEFORE, BEFORE.replace("f(1, 2)", "f(1, 3)"))
    assert not changed.ok


HEADER = "#pragma once\n#define LANES 32\n__device__ inline int lanes() { return LANES; }\n"


def _header_check(root: Path, new: str):
    """The identity check of csrc/lanes.cuh before and after it is rewritten to `new`, with real nvcc."""
    identity = CudaIdentity(root, Toolchains(hip=LocalSandbox(root), cuda=LocalSandbox(root)))
    before = identity.texts(["csrc/lanes.cuh"])
    (root / "csrc" / "lanes.cuh").write_text(new)
    [check] = identity.checks(before, identity.texts(["csrc/lanes.cuh"]))
    return check


def test_a_header_macro_whose_value_changes_for_cuda_is_caught(tmp_path: Path, nvcc):
    # LANES is used only by includers: the header's own -E output reads the same without -dD
    (tmp_path / "csrc").mkdir()
    (tmp_path / "csrc" / "lanes.cuh").write_text(HEADER)
    changed = _header_check(tmp_path, HEADER.replace("LANES 32", "LANES 64"))
    assert not changed.ok and "-dD" in changed.cmd


def test_a_guarded_macro_and_a_compat_include_keep_the_header_identical(tmp_path: Path, nvcc):
    (tmp_path / "csrc").mkdir()
    (tmp_path / "csrc" / "compat.h").write_text("#pragma once\n#define ROCPORT_FULL_MASK 0xffffffffu\n")
    (tmp_path / "csrc" / "lanes.cuh").write_text(HEADER)
    guarded = HEADER.replace(
        "#define LANES 32\n",
        '#include "compat.h"\n#ifdef USE_ROCM\n#define LANES 64\n#else\n#define LANES 32\n#endif\n',
    )
    check = _header_check(tmp_path, guarded)
    assert check.ok, check.detail  # the included header's own macros are not the patched file's


def test_a_change_only_the_host_pass_compiles_is_caught(tmp_path: Path, nvcc):
    # nvcc -E prints the device pass alone: host-only code under #ifndef __CUDA_ARCH__ is in neither
    # stream unless the host pass is preprocessed too
    (tmp_path / "csrc").mkdir()
    host_only = "#ifndef __CUDA_ARCH__\nint copy_size() { return 16; }\n#endif\n__global__ void k() {}\n"
    (tmp_path / "csrc" / "lanes.cuh").write_text(host_only)
    changed = _header_check(tmp_path, host_only.replace("return 16", "return 32"))
    assert not changed.ok and "changed" in changed.detail
    (tmp_path / "csrc" / "lanes.cuh").write_text(host_only)
    same = _header_check(tmp_path, "// moved\n\n" + host_only)
    assert same.ok, same.detail
