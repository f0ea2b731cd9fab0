"""agent/patch/validate.py: only patches that pass hipcc, nvcc and the CUDA -E identity are kept."""

from __future__ import annotations

import subprocess

from agent.patch.units import touched_units
from agent.patch.validate import Toolchains, Validator
from agent.proposers.rules import file_diff
from sandboxes.local import LocalSandbox
from tools.cpp.equivalence import cuda_tokens
from tools.records import Failure, Proposal

KERNEL = """#include <cuda_runtime.h>
#include <cuda_fp16.h>

__global__ void k(__half* x) { x[0] = __float2half(1.f); }
"""


def _tools(root) -> Toolchains:
    return Toolchains(
        hip=LocalSandbox(root), arch="gfx90a", cuda=LocalSandbox(root), extra_env={"HIP_PLATFORM": "amd"}
    )


def _fail(symbol: str) -> Failure:
    return Failure(
        kind="cuda_header",
        message=f"'{symbol}' file not found",
        file="k.cu",
        symbol=symbol,
        signature=f"cuda_header:k.cu:{symbol}",
        facts={"unit": "k.cu"},
    )


def _proposal(root, new: str, files=("k.cu",)) -> Proposal:
    old = (root / "k.cu").read_text()
    return Proposal("sig", "test", file_diff("k.cu", old, new), "test", list(files))


def _status(root) -> str:
    return subprocess.run(
        ["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True, check=True
    ).stdout


def test_patch_that_breaks_the_cuda_build_is_reverted(git_repo, hipcc, nvcc):
    root = git_repo({"k.cu": KERNEL})
    hip_only = KERNEL.replace("cuda_runtime.h", "hip/hip_runtime.h").replace("cuda_fp16.h", "hip/hip_fp16.h")
    outcome = Validator(root, _tools(root)).validate(_proposal(root, hip_only), _fail("cuda_runtime.h"))
    assert not outcome.kept and not outcome.applied
    failed = {c.name for c in outcome.checks if not c.ok}
    assert failed == {"cuda -E identity k.cu", "nvcc k.cu"}
    assert "breaks the CUDA build" in outcome.reason
    assert any(c.name == "hipcc gfx90a k.cu" and c.ok for c in outcome.checks)  # ROCm alone would have passed
    assert _status(root) == ""


def test_targeted_failure_still_there_is_rejected(git_repo, hipcc, nvcc):
    root = git_repo({"k.cu": KERNEL})
    only_runtime = KERNEL.replace(
        "#include <cuda_runtime.h>\n",
        "#ifdef USE_ROCM\n#include <hip/hip_runtime.h>\n#else\n#include <cuda_runtime.h>\n#endif\n",
    )
    outcome = Validator(root, _tools(root)).validate(_proposal(root, only_runtime), _fail("cuda_fp16.h"))
    assert not outcome.kept and "targeted failure still reported" in outcome.reason
    assert _status(root) == ""


def test_path_escape_is_refused_before_anything_runs(git_repo, tmp_path):
    root = git_repo({"k.cu": KERNEL})
    diff = file_diff("../escape.h", None, "pwned\n")
    outcome = Validator(root, _tools(root)).validate(Proposal("s", "t", diff, "t", ["../escape.h"]), None)
    assert not outcome.applied and outcome.reason.startswith("refused patch") and not outcome.checks
    assert not (root.parent / "escape.h").exists()


def test_header_edit_compiles_the_units_that_include_it(git_repo):
    root = git_repo(
        {
            "csrc/common.cuh": "#pragma once\n",
            "csrc/a.cu": '#include "common.cuh"\n',
            "csrc/ops/b.cu": '#include "../mid.cuh"\n',
            "csrc/mid.cuh": '#include "common.cuh"\n',
            "csrc/c.cu": "int c;\n",
            "csrc/lonely.cuh": "int l;\n",
        }
    )
    assert touched_units(root, ["csrc/common.cuh"]) == ["csrc/a.cu", "csrc/ops/b.cu"]
    assert touched_units(root, ["csrc/lonely.cuh", "csrc/c.cu"]) == ["csrc/c.cu", "csrc/lonely.cuh"]


def test_a_source_another_source_includes_is_compiled_through_its_includer(git_repo):
    """deepwave's acoustic.cu is instantiated by a unit that #defines DW_NDIM & co and includes it: alone it
    stops at `#error DW_ACCURACY must be specified`, which no build compiles; a unity build is the same."""
    root = git_repo(
        {
            "common.h": "#pragma once\n",
            "kernel.cu": '#ifndef DW_N\n#error DW_N must be specified\n#endif\n#include "common.h"\n',
            "unit_1d.cu": '#define DW_N 1\n#include "kernel.cu"\n',
            "unit_2d.cu": '#define DW_N 2\n#include "kernel.cu"\n',
            "all.cu": '#include "unit_1d.cu"\n',
            "other.cu": '#include "common.h"\n',
        }
    )
    assert sorted(touched_units(root, ["common.h"])) == ["all.cu", "other.cu", "unit_2d.cu"]
    assert sorted(touched_units(root, ["kernel.cu"])) == ["all.cu", "unit_2d.cu"]
    assert touched_units(root, ["other.cu"]) == ["other.cu"]


def test_cuda_tokens_ignore_line_markers_and_spacing_not_content():
    a = '# 1 "k.cu"\nint  x = f(1,2);\n# 7 "k.cu" 2\nconst char* s = "a  b";\n'
    b = '#line 3 "k.cu"\n\nint x=f( 1, 2 );\nconst char* s = "a  b";\n'
    assert cuda_tokens(a) == cuda_tokens(b)
    assert cuda_tokens(a) != cuda_tokens(a.replace('"a  b"', '"a b"'))


def test_profile_templates_without_language_still_preprocess_headers(git_repo, nvcc):
    from agent.profiles import load_profile

    root = git_repo(
        {"csrc/compat.h": "#pragma once\n#define A 1\n", "csrc/k.cu": '#include "compat.h"\nint a = A;\n'}
    )
    tools = Toolchains.from_profile(
        LocalSandbox(root), LocalSandbox(root), "gfx942", load_profile("tinyserve")
    )
    tokens = Validator(root, tools).preprocess(["csrc/compat.h", "csrc/k.cu"])
    assert isinstance(tokens["csrc/compat.h"], list) and tokens["csrc/k.cu"][-5:] == [
        "int",
        "a",
        "=",
        "1",
        ";",
    ]


def test_without_nvcc_the_evidence_says_cuda_was_not_checked(git_repo, hipcc):
    root = git_repo({"k.cu": KERNEL})
    guarded = KERNEL.replace(
        "#include <cuda_runtime.h>\n#include <cuda_fp16.h>\n",
        "#ifdef USE_ROCM\n#include <hip/hip_runtime.h>\n#include <hip/hip_fp16.h>\n#else\n"
        "#include <cuda_runtime.h>\n#include <cuda_fp16.h>\n#endif\n",
    )
    tools = Toolchains(hip=LocalSandbox(root), arch="gfx90a", extra_env={"HIP_PLATFORM": "amd"})
    outcome = Validator(root, tools).validate(_proposal(root, guarded), _fail("cuda_runtime.h"))
    assert outcome.kept
    assert [(c.name, c.detail) for c in outcome.checks][-1] == (
        "cuda checks",
        "skipped: no nvcc on this machine",
    )


def test_a_header_patch_recompiles_no_includer_that_does_not_use_its_lines(git_repo, hipcc):
    """The build compiled both includers; a guarded macro added to their header changes only line markers
    in them, so their ROCm unit checks reuse the build's objects (compiled nothing)."""
    from sandboxes.compile_service import CompileService

    header = "#pragma once\n#include <hip/hip_runtime.h>\n#define SCALE 2.0f\n"
    unit = '#include "common.h"\n__global__ void k_{n}(float* x) {{ x[0] *= SCALE; }}\n'
    root = git_repo({"csrc/common.h": header, **{f"csrc/{n}.cu": unit.format(n=n) for n in "ab"}})
    box = LocalSandbox(root, env={"HIP_PLATFORM": "amd"})
    service = CompileService.start(box)
    try:
        unit_cmd = (
            "hipcc -x hip --offload-arch={arch} -DUSE_ROCM -Icsrc -c {file} -o {out}"  # the build's flags
        )
        tools = Toolchains(
            hip=box, arch="gfx90a", hip_unit=unit_cmd, hip_service=service, sources=["csrc/*.cu"]
        )
        build = " && ".join(unit_cmd.format(arch="gfx90a", file=f"csrc/{n}.cu", out=f"{n}.o") for n in "ab")
        assert box.run(service.build_prefix() + build, timeout=600).ok
        guarded = (
            header + "#ifdef USE_ROCM\n#define WARP_SHFL_XOR(mask, ...) __shfl_xor(__VA_ARGS__)\n#endif\n"
        )
        diff = file_diff("csrc/common.h", header, guarded)
        outcome = Validator(root, tools).validate(Proposal("s", "t", diff, "t", ["csrc/common.h"]), None)
        assert outcome.kept, outcome.reason
        assert {c.name for c in outcome.checks} >= {"hipcc gfx90a csrc/a.cu", "hipcc gfx90a csrc/b.cu"}
        kinds = [line.split("\t")[0] for line in (service.cache_dir / "ledger").read_text().splitlines()]
        assert kinds == ["miss", "miss", "line markers only", "line markers only"]
    finally:
        service.close()
        box.close()


def test_the_same_header_failing_in_another_file_is_the_next_failure_not_the_targeted_one():
    """lightseq's common.h and embKernels_int8.h both include <cuda.h>: once common.h is fixed, hipcc
    stops at the second one. That is progress (the next wave's failure), not the fix failing."""
    from agent.patch.targeted import failure_gone

    failure = Failure(
        kind="cuda_header", message="'cuda.h' file not found", file="kernels/common.h", symbol="cuda.h"
    )
    elsewhere = "kernels/emb.h:2:10: fatal error: 'cuda.h' file not found\n1 error generated.\n"
    assert failure_gone(failure, elsewhere)
    assert failure_gone(failure, "./kernels/emb.h:2:10: fatal error: 'cuda.h' file not found\n")
    # still where it was, in a file the patch itself touched, or on a line that names no file: not gone
    assert not failure_gone(failure, "kernels/common.h:4:10: fatal error: 'cuda.h' file not found\n")
    assert not failure_gone(failure, "/w/repo/kernels/common.h:4:10: fatal error: 'cuda.h' file not found\n")
    assert not failure_gone(failure, elsewhere, touched=["kernels/emb.h"])
    assert not failure_gone(failure, "error: cannot find 'cuda.h'\n")
    assert not failure_gone(Failure(kind="cuda_header", message="m", symbol="cuda.h"), elsewhere)


def test_nvcc_compiles_only_the_includers_whose_cuda_tokens_the_patch_changed(git_repo, hipcc, nvcc):
    """A header gains a mask macro (for CUDA too, so no guard proves it) and one unit now spells its mask
    with it: that unit reads other tokens for CUDA and is compiled by nvcc; the header's other includer
    reads the very same tokens in both nvcc passes and is not compiled again."""
    header = "#pragma once\n#include <cuda_runtime.h>\n"
    a = '#include "common.h"\n__global__ void a(int* x) { x[0] = __shfl_xor_sync(0xffffffff, x[0], 1); }\n'
    b = '#include "common.h"\n__global__ void b(int* x) { x[0] += 1; }\n'
    root = git_repo({"csrc/common.h": header, "csrc/a.cu": a, "csrc/b.cu": b})
    new_header = header + "#define FULL_MASK 0xffffffffu\n"
    diff = file_diff("csrc/common.h", header, new_header) + file_diff(
        "csrc/a.cu", a, a.replace("0xffffffff,", "FULL_MASK,")
    )
    tools = _tools(root)
    tools.sources = ["csrc/*.cu"]
    proposal = Proposal("s", "t", diff, "t", ["csrc/common.h", "csrc/a.cu"])
    outcome = Validator(root, tools).validate(proposal, None, keep=False)
    checks = {c.name: c for c in outcome.checks}
    assert checks["nvcc csrc/a.cu"].detail == "compiles"
    assert checks["nvcc csrc/b.cu"].ok and "same tokens" in checks["nvcc csrc/b.cu"].detail
    assert _status(root) == ""
