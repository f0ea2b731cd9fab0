"""Python-side findings: CUDA-only imports, e4m3fn without fnuz, torch.version.cuda gates."""

from __future__ import annotations

import pytest

from tests.tools.scan.helpers import scan_files, summary

UNGUARDED_IMPORTS = [
    ("import deep_gemm\n", "deep_gemm", 1),
    ("from flashinfer import BatchDecodeWithPagedKVCacheWrapper\n", "flashinfer", 1),
    ("import torch, flash_mla\n", "flash_mla", 1),
    ("import nvidia.cublas.lib\n", "nvidia", 1),
    ("import pynvml\n", "pynvml", 1),
    ("from cuda.bindings import driver\n", "cuda", 1),
    ("import importlib\nmod = importlib.import_module('deep_gemm')\n", "deep_gemm", 2),
    ("def kernel():\n    import deep_gemm\n    return deep_gemm\n", "deep_gemm", 2),
    ("import os\nif os.environ.get('USE_DEEP_GEMM'):\n    import deep_gemm\n", "deep_gemm", 3),
    ("from sglang.srt.utils import is_hip\nif is_hip():\n    import flashinfer\n", "flashinfer", 3),
    (
        (
            "from vllm.platforms import current_platform\nif current_platform.is_cuda_alike():\n"
            "    import flashinfer\n"
        ),
        "flashinfer",
        3,
    ),
    ("try:\n    import deep_gemm\nexcept KeyError:\n    pass\n", "deep_gemm", 2),
]


@pytest.mark.parametrize(("text", "module", "line"), UNGUARDED_IMPORTS)
def test_unguarded_cuda_only_import_is_found_once(tmp_path, text, module, line):
    findings = scan_files(tmp_path, {"pkg/m.py": text})
    assert summary(findings) == [("cuda_only_dep", "pkg/m.py", line, module)]
    assert findings[0].facts["fix_family"] == "platform_guarded_import"


GUARDED_IMPORTS = [
    "try:\n    import deep_gemm\nexcept ImportError:\n    deep_gemm = None\n",
    "try:\n    import deep_gemm\nexcept (ModuleNotFoundError, AttributeError):\n    deep_gemm = None\n",
    "try:\n    from flashinfer import x\nexcept Exception:\n    x = None\n",
    "from sglang.srt.utils import is_cuda\nif is_cuda():\n    import deep_gemm\n",
    "from sglang.srt.utils import is_hip\nif not is_hip():\n    import deep_gemm\n",
    "from sglang.srt.utils import is_hip\nif is_hip():\n    pass\nelse:\n    import deep_gemm\n",
    "import torch\nif torch.version.hip is None:\n    import flash_mla\n",
    "import torch\nif torch.version.cuda is not None:\n    import flash_mla\n",
    "import torch\nif torch.version.cuda:\n    import flash_mla\n",
    (
        "from vllm.platforms import current_platform\nif current_platform.is_rocm():\n    x = 1\nelse:\n"
        "    import flashinfer\n"
    ),
    (
        "from sglang.srt.utils import is_hip\ndef f():\n    if is_hip():\n        return None\n"
        "    import deep_gemm\n    return deep_gemm\n"
    ),
    "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import flashinfer\n",
    "from .deep_gemm import wrapper\nimport sglang.deep_gemm_wrapper\n",
    (
        "from vllm.utils import has_deep_gemm\ndef init():\n    if not has_deep_gemm():\n        return\n"
        "    import deep_gemm\n"
    ),
    "import importlib.util\nif importlib.util.find_spec('flash_mla') is not None:\n    import flash_mla\n",
    (
        "from sglang.srt.utils import is_flashinfer_available\nif is_flashinfer_available():\n"
        "    from flashinfer import norm\n"
    ),
    "# import deep_gemm\ns = 'import flashinfer'\n",
]


@pytest.mark.parametrize("text", GUARDED_IMPORTS)
def test_guarded_import_is_not_reported(tmp_path, text):
    assert scan_files(tmp_path, {"pkg/m.py": text}) == []


def test_e4m3fn_without_fnuz_is_reported_once_per_file(tmp_path):
    text = "import torch\nA = torch.float8_e4m3fn\n\ndef cast(x):\n    return x.to(torch.float8_e4m3fn)\n"
    findings = scan_files(tmp_path, {"q.py": text})
    assert summary(findings) == [("fp8_layout", "q.py", 2, "float8_e4m3fn")]
    assert findings[0].facts["lines"] == [2, 5]
    assert findings[0].facts["fix_family"] == "fp8_fnuz_normalize"


@pytest.mark.parametrize(
    "handling",
    [
        "B = torch.float8_e4m3fnuz\n",
        "from sglang.srt.utils import is_fp8_fnuz\n",
        "from vllm.model_executor.layers.quantization.utils.w8a8_utils import normalize_e4m3fn_to_e4m3fnuz\n",
        "from vllm.platforms import current_platform\nC = current_platform.fp8_dtype()\n",
    ],
)
def test_e4m3fn_with_fnuz_handling_is_not_reported(tmp_path, handling):
    text = f"import torch\n{handling}A = torch.float8_e4m3fn\n"
    assert scan_files(tmp_path, {"q.py": text}) == []


def test_e4m3fn_only_on_the_cuda_path_is_not_reported(tmp_path):
    text = "import torch\nif torch.version.cuda:\n    A = torch.float8_e4m3fn\n"
    assert scan_files(tmp_path, {"q.py": text}) == []


@pytest.mark.parametrize(
    ("text", "line", "why"),
    [
        ("if version.parse(torch.version.cuda) >= version.parse('12.4'):\n    FAST = True\n", 3, "raises"),
        ("MAJOR = int(torch.version.cuda.split('.')[0])\n", 3, "raises"),
        ("assert torch.version.cuda, 'needs CUDA'\n", 3, "assert"),
        ("if torch.version.cuda is None:\n    raise RuntimeError('CUDA only')\n", 3, "stops ROCm"),
    ],
)
def test_torch_version_cuda_uses_that_break_rocm_are_reported(tmp_path, text, line, why):
    findings = scan_files(tmp_path, {"g.py": f"import torch\nfrom packaging import version\n{text}"})
    assert summary(findings) == [("cuda_only_dep", "g.py", line, "torch.version.cuda")]
    assert findings[0].facts["fix_family"] == "platform_gate" and why in findings[0].message


@pytest.mark.parametrize(
    "text",
    [
        "ON_GPU = torch.version.cuda is not None or torch.version.hip is not None\n",
        "if torch.version.cuda is not None:\n    import flash_mla\n",
        "NEW = torch.version.cuda is not None and int(torch.version.cuda.split('.')[0]) >= 12\n",
        "CUDA = torch.version.cuda\n",
    ],
)
def test_torch_version_cuda_as_a_platform_check_is_fine(tmp_path, text):
    assert scan_files(tmp_path, {"g.py": f"import torch\n{text}"}) == []


def test_triton_inline_asm_is_reported_unless_guarded(tmp_path):
    call = (
        "tl.inline_asm_elementwise('cvt.rn.f16x2.f32 $0, $1, $2;', '=r,r,r', [a, b], dtype=tl.int32, "
        "is_pure=True, pack=1)"
    )
    bare = f"import triton.language as tl\ndef f(a, b):\n    return {call}\n"
    guarded = (
        f"import triton.language as tl\nfrom sglang.srt.utils import is_hip\ndef f(a, b):\n"
        f"    if is_hip():\n        return a\n    return {call}\n"
    )
    assert summary(scan_files(tmp_path, {"t.py": bare})) == [
        ("inline_ptx", "t.py", 3, "inline_asm_elementwise")
    ]
    assert scan_files(tmp_path / "g", {"t.py": guarded}) == []


def test_python_that_does_not_parse_is_skipped_with_a_note(tmp_path):
    from tests.tools.scan.helpers import write
    from tools.scan import scan_report

    root = write(tmp_path / "r", {"py2.py": "import deep_gemm\nprint 'hello'\n"})
    report = scan_report(root)
    assert report.findings == []
    assert report.skipped[0][0] == "py2.py" and "not parsed as Python" in report.skipped[0][1]


def test_a_module_that_wraps_the_cuda_only_package_is_not_a_rocm_import(tmp_path):
    files = {
        "srt/layers/attention/flashinfer_backend.py": "import flashinfer\n",
        "srt/layers/deep_gemm_wrapper/entrypoint.py": "import deep_gemm\n",
        "srt/layers/moe/router.py": "import deep_gemm\n",
    }
    assert [(f.file, f.symbol) for f in scan_files(tmp_path, files)] == [
        ("srt/layers/moe/router.py", "deep_gemm")
    ]


@pytest.mark.parametrize(
    "text",
    [
        "import torch\n# gfx950 (MI355X) is OCP fp8\nW_DTYPE = torch.float8_e4m3fn\n",
        "import torch\nNVFP4_BLOCK_SCALE_DTYPE = torch.float8_e4m3fn\n",
    ],
)
def test_e4m3fn_where_it_is_right_on_rocm_is_not_reported(tmp_path, text):
    assert scan_files(tmp_path, {"q.py": text}) == []


def test_modules_in_a_cuda_vendor_directory_are_not_rocm_imports(tmp_path):
    files = {
        "models/kimi/nvidia/attention.py": "import cutlass\n",
        "cute_utils/ops.py": "import cutlass\n",
        "models/kimi/attention.py": "import cutlass\n",
    }
    assert [f.file for f in scan_files(tmp_path, files)] == ["models/kimi/attention.py"]


def test_e4m3fn_in_a_dtype_test_is_not_reported_but_a_cast_is(tmp_path):
    files = {
        "check.py": "import torch\ndef ok(x):\n    assert x.dtype in (torch.bfloat16, torch.float8_e4m3fn)\n"
        "    return x.dtype == torch.float8_e4m3fn\n",
        "cast.py": "import torch\ndef q(x):\n    return x.to(torch.float8_e4m3fn)\n",
    }
    assert summary(scan_files(tmp_path, files)) == [("fp8_layout", "cast.py", 3, "float8_e4m3fn")]


def test_triton_inline_asm_is_reported_only_when_it_is_ptx(tmp_path):
    call = (
        "import triton.language as tl\n"
        "def f(x):\n    return tl.inline_asm_elementwise({asm!r}, '=r,r', [x], dtype=tl.int32)\n"
    )
    files = {
        "amd_wait.py": call.format(asm="s_waitcnt vmcnt(0)"),
        "ptx_rcp.py": call.format(asm="rcp.approx.ftz.f32 $0, $1;"),
    }
    assert [f.file for f in scan_files(tmp_path, files)] == ["ptx_rcp.py"]


def test_vendor_directories_hold_no_rocm_work(tmp_path):
    files = {
        "models/m3/amd/caches.py": "import torch\nx = torch.empty(4, dtype=torch.float8_e4m3fn)\n",
        "models/k3/nvidia/decode.py": "import torch\nx = torch.zeros(4).to(torch.float8_e4m3fn)\n",
        "models/k3/decode.py": "import torch\nx = torch.zeros(4).to(torch.float8_e4m3fn)\n",
    }
    assert [f.file for f in scan_files(tmp_path, files)] == ["models/k3/decode.py"]


def test_imports_in_a_backends_own_code_are_not_rocm_imports(tmp_path):
    files = {
        "moe/oracle.py": "def convert(backend):\n    if backend == Backend.FLASHINFER_TRTLLM:\n"
        "        from flashinfer import shuffle\n        return shuffle\n",
        "comm/all2all.py": "class DeepEPAll2AllManager:\n    def handle(self):\n        import deep_ep\n",
        "moe/router_gemm_sm90.py": "import cutlass\n",
        "moe/plain.py": "def convert():\n    from flashinfer import shuffle\n    return shuffle\n",
    }
    assert summary(scan_files(tmp_path, files)) == [("cuda_only_dep", "moe/plain.py", 2, "flashinfer")]


def test_a_module_only_cuda_vendor_modules_import_is_not_reachable_on_rocm(tmp_path):
    files = {
        "pkg/common/ops/gemm.py": "import cutlass\n",
        "pkg/models/k3/nvidia/model.py": "from pkg.common.ops.gemm import run\n",
        "pkg/common/ops/shared.py": "import cutlass\n",
        "pkg/models/k3/nvidia/other.py": "from pkg.common.ops import shared\n",
        "pkg/models/k3/model.py": "from ...common.ops.shared import run\n",
    }
    assert [f.file for f in scan_files(tmp_path, files)] == ["pkg/common/ops/shared.py"]


def test_candidate_lines_are_the_lines_a_whole_file_search_finds():
    """The needle-first search gives exactly the lines of a match search over the whole file: several
    matches on a line, a needle with no match, a word that only contains one, CRLF, no final newline."""
    import re

    from tools.cpp.source import SourceText
    from tools.scan.python_rules import PY_CANDIDATES, _candidate_lines

    text = (
        '"""Imported from nowhere: import flashinfer is only said here."""\n'
        "import os, flashinfer  # two candidates? one line\r\n"
        "x = reimport_module(1); y = importlib.import_module('deep_gemm')\n"
        "from_here = 1  # a needle, no match\n"
        "if torch.version.cuda is None: pass\n"
        "dtype = torch.float8_e4m3fnuz; d2 = torch.float8_e4m3fn\n"
        "    from .vendor import  cutlass\n"
        "tl.inline_asm_elementwise(asm='mov.b32 %0, %1;')\n"
        "import  deep_ep"
    )
    every = sorted({text.count("\n", 0, m.start()) + 1 for m in re.finditer(PY_CANDIDATES.pattern, text)})
    assert _candidate_lines(SourceText("m.py", text)) == every
    assert every == [1, 2, 3, 5, 6, 7, 8, 9]  # not line 4: `from_here` holds a needle, no match
