"""cuda_only_dep rule: a platform-first guard using the repo's helper, only where a fallback exists."""

from __future__ import annotations

import subprocess
import sys

from agent.patch.validate import Toolchains, Validator
from agent.proposers.rules import Workspace, propose_for
from sandboxes.local import LocalSandbox
from tests.agent.rules.helpers import declines, failure, propose

PLATFORM = "import os\n\n\ndef is_rocm() -> bool:\n    return os.environ.get('FAKE_ROCM') == '1'\n"
MOE = """import math

from serve import platform

# Grouped GEMMs for the routed experts.
from deep_gemm import (fp8_gemm_nt,
                       m_grouped_fp8_gemm)


def experts(x):
    if fp8_gemm_nt is None or m_grouped_fp8_gemm is None:
        return math.fsum(x)
    return fp8_gemm_nt(x)
"""
NO_FALLBACK = "import torch\nimport flash_mla\n\n\ndef attn(q):\n    return flash_mla.run(q)\n"


def _import(root) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", "import serve.moe as m; print(m.experts([1.0, 2.0]))"],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )


def test_guard_uses_repo_helper_and_the_module_imports_again(git_repo):
    root = git_repo({"serve/__init__.py": "", "serve/platform.py": PLATFORM, "serve/moe.py": MOE})
    assert "No module named 'deep_gemm'" in _import(root).stderr
    fail = failure("cuda_only_dep", "serve/moe.py", "deep_gemm")
    prop = propose(root, fail)
    assert (
        "+if not platform.is_rocm():\n+    try:\n+        from deep_gemm import (fp8_gemm_nt,\n" in prop.diff
    )
    assert "+        fp8_gemm_nt = None\n+        m_grouped_fp8_gemm = None\n+else:\n" in prop.diff
    outcome = Validator(root, Toolchains(hip=LocalSandbox(root))).validate(prop, fail)
    assert outcome.kept and [c.name for c in outcome.checks] == [
        "py_compile serve/moe.py",
        "import serve.moe",
    ]
    assert outcome.checks[1].detail == "imports"  # proven by importing it, not only by compiling it
    after = _import(root)
    assert after.returncode == 0 and after.stdout.strip() == "3.0"  # the existing fallback path runs
    assert not propose_for(fail, Workspace(root=root)).proposals


def test_torch_version_hip_when_the_repo_has_no_helper(git_repo):
    root = git_repo({"m.py": "import torch\nimport flashinfer\n\nX = 1\n"})
    prop = propose(root, failure("cuda_only_dep", "m.py", "flashinfer"))
    assert "+if torch.version.hip is None:\n" in prop.diff


def test_declines_without_fallback_path(git_repo):
    root = git_repo({"attn.py": NO_FALLBACK})
    reason = declines(root, failure("cuda_only_dep", "attn.py", "flash_mla"))[0]
    assert "no fallback path" in reason and "flash_mla" in reason


def test_never_guards_torch_itself(git_repo):
    root = git_repo({"m.py": "import torch\n\nX = torch.zeros(1)\n"})
    reason = declines(root, failure("cuda_only_dep", "m.py", "torch"))[0]
    assert "needed on every platform" in reason


def test_torch_version_hip_needs_torch_imported_before_the_guard(git_repo):
    root = git_repo({"m.py": "import flashinfer\nimport torch\n\nX = 1\n"})
    reasons = declines(root, failure("cuda_only_dep", "m.py", "flashinfer"))
    assert reasons and "no torch import to key on" in reasons[0]


def test_a_guard_that_breaks_the_import_is_rejected(git_repo):
    """A guard that compiles but raises NameError on import is caught by importing the module."""
    from agent.proposers.rules import file_diff
    from tools.records import Proposal

    root = git_repo({"pkg/__init__.py": "", "pkg/m.py": "X = 1\n"})
    diff = file_diff("pkg/m.py", "X = 1\n", "if torch.version.hip is None:\n    pass\nX = 1\n")
    prop = Proposal(failure_signature="s", proposer="test", diff=diff, rationale="", files=["pkg/m.py"])
    outcome = Validator(root, Toolchains(hip=LocalSandbox(root))).validate(prop, None)
    assert not outcome.kept and "breaks the import: NameError" in outcome.reason
    assert (root / "pkg/m.py").read_text() == "X = 1\n"


def test_helper_bound_after_the_import_is_not_used_for_the_guard(git_repo):
    text = (
        "import cutlass\nfrom vllm.platforms import current_platform\n\n"
        "def f():\n    if cutlass is None or not current_platform.is_cuda():\n        return 0\n"
    )
    root = git_repo({"m.py": text})
    reason = declines(root, failure("cuda_only_dep", "m.py", "cutlass"))[0]
    assert "bound after the CUDA-only import" in reason


def test_a_module_imported_twice_is_not_half_guarded(git_repo):
    root = git_repo(
        {"m.py": "import torch\nimport cutlass\nfrom cutlass import cute\n\nX = cutlass is None\n"}
    )
    reason = declines(root, failure("cuda_only_dep", "m.py", "cutlass"))[0]
    assert "imports cutlass again at line(s) 3" in reason


def test_guard_lines_follow_the_repo_ruff_config_and_nothing_else_moves(git_repo):
    """The repo's ruff format config shapes the lines the guard adds; its other lines stay as written."""
    untouched = "\n\nLAYOUT = [1,2]\n"
    root = git_repo(
        {
            "pyproject.toml": '[tool.ruff]\nline-length = 100\n\n[tool.ruff.format]\nquote-style = "single"\n',
            "serve/__init__.py": "",
            "serve/platform.py": PLATFORM,
            "serve/moe.py": MOE + untouched,
        }
    )
    prop = propose(root, failure("cuda_only_dep", "serve/moe.py", "deep_gemm"))
    assert "+        from deep_gemm import fp8_gemm_nt, m_grouped_fp8_gemm\n" in prop.diff  # joined: fits 100
    assert "+        from deep_gemm import (" not in prop.diff
    assert "LAYOUT = [1, 2]" not in prop.diff  # not a changed line: not reformatted


def test_a_module_that_cannot_be_imported_either_way_is_marked_not_proven(git_repo):
    """Kept (it changes nothing the import reaches), but its commit evidence never says [ok]."""
    from tools.git import evidence_lines

    broken = MOE.replace("import math\n", "import math\nimport serve_native_ext\n")
    root = git_repo({"serve/__init__.py": "", "serve/platform.py": PLATFORM, "serve/moe.py": broken})
    fail = failure("cuda_only_dep", "serve/moe.py", "deep_gemm")
    outcome = Validator(root, Toolchains(hip=LocalSandbox(root))).validate(propose(root, fail), fail)
    assert outcome.kept
    evidence = evidence_lines(outcome.checks)
    assert "- [not proven] import serve.moe: not proven by import" in evidence
    assert "serve_native_ext" in evidence and "[ok] import serve.moe" not in evidence
