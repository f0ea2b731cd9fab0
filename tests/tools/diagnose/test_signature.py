"""Signatures cluster the same failure across machines and runs; paths come back repo-relative."""

from __future__ import annotations

from tools.diagnose import diagnose_text

CLANG = """\
In file included from {root}/csrc/activation.cu:3:
{root}/csrc/compat.cuh:{line}:10: fatal error: 'cuda_bf16.h' file not found
  {line} | #include <cuda_bf16.h>
      |          ^~~~~~~~~~~~~
1 error generated when compiling for gfx942.
"""
KEYERROR = """\
[2025-09-08 18:19:22 TP{rank}] Scheduler hit an exception: Traceback (most recent call last):
  File "{root}/python/tinyserve/models/glm_moe.py", line {line}, in load_weights
    param = params_dict[name]
KeyError: 'model.mtp.block.mlp.shared_experts.gate_up_proj.weight'
"""


def test_same_header_error_on_two_machines_has_one_signature(git_repo):
    repo = git_repo({"csrc/activation.cu": "", "csrc/compat.cuh": ""})
    here = diagnose_text(CLANG.format(root=repo, line=12), repo_root=repo)
    # the same repo built in a container that mounts it elsewhere, after an edit moved the include
    there = diagnose_text(CLANG.format(root="/workspace/build-7f3a/proj", line=14), repo_root=repo)
    assert (
        [f.signature for f in here]
        == [f.signature for f in there]
        == ["cuda_header:csrc/compat.cuh:cuda_bf16.h"]
    )
    assert here[0].file == there[0].file == "csrc/compat.cuh"
    assert here[0].facts["unit"] == there[0].facts["unit"] == "csrc/activation.cu"
    assert (here[0].line, there[0].line) == (12, 14)


def test_traceback_from_container_path_maps_to_repo(git_repo):
    repo = git_repo({"python/tinyserve/models/glm_moe.py": ""})
    host = diagnose_text(KEYERROR.format(root=repo, line=110, rank=0), repo_root=repo)
    container = diagnose_text(
        KEYERROR.format(root="/sgl-workspace/tinyserve", line=118, rank=3), repo_root=repo
    )
    assert host[0].signature == container[0].signature
    assert container[0].file == "python/tinyserve/models/glm_moe.py"
    assert container[0].line == 118


def test_build_and_temp_dirs_are_stripped_without_a_repo():
    logs = [CLANG.format(root=f"/tmp/pip-req-build-{suffix}", line=12) for suffix in ("a8f2k1", "zz91q0")]
    first, second = (diagnose_text(log) for log in logs)
    assert first[0].signature == second[0].signature
    assert first[0].file == "csrc/compat.cuh"
    setup_tree = (
        "/home/ci/proj/build/temp.linux-x86_64-cpython-310/csrc/x.cu:3:1: "
        "error: unknown type name '__nv_bfloat16'"
    )
    assert diagnose_text(setup_tree)[0].file == "csrc/x.cu"


def test_unknown_lines_ignore_pids_addresses_and_times():
    one = diagnose_text("FATAL: worker pid=4121 lost heartbeat at 0x7f3a2c001000 after 12.5s\n")
    two = diagnose_text("FATAL: worker pid=977 lost heartbeat at 0x55d0e1a2b000 after 3.1s\n")
    assert [f.kind for f in one] == ["unknown"]
    assert one[0].signature == two[0].signature
    assert "4121" not in one[0].signature and "0x7f3a" not in one[0].signature


def test_tp_workers_printing_one_traceback_yield_one_failure(git_repo):
    repo = git_repo({"python/tinyserve/models/glm_moe.py": ""})
    log = "".join(KEYERROR.format(root="/sgl-workspace/tinyserve", line=118, rank=r) for r in range(8))
    failures = diagnose_text(log, repo_root=repo)
    assert len(failures) == 1
    assert failures[0].symbol == "model.mtp.block.mlp.shared_experts.gate_up_proj.weight"


def test_hipified_build_copies_map_back_to_their_source(git_repo):
    repo = git_repo({"csrc/attention/attention_kernels.cu": "", "csrc/attention/dtype_bfloat16.cuh": ""})
    log = (
        "In file included from /build/temp.linux-x86_64-cpython-312/csrc/attention/attention_kernels.hip:23:\n"
        "/build/temp.linux-x86_64-cpython-312/csrc/attention/dtype_bfloat16_hip.cuh:30:10: "
        "fatal error: 'cuda_bf16.h' file not found\n"
    )
    (failure,) = diagnose_text(log, repo_root=repo)
    assert failure.file == "csrc/attention/dtype_bfloat16.cuh"
    assert failure.facts["unit"] == "csrc/attention/attention_kernels.cu"
