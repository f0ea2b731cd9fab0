"""Shared helpers for the scan tests: write a tree, scan it, summarise findings."""

from __future__ import annotations

from pathlib import Path

from tools.records import Failure
from tools.scan import scan_repo

# Ways a CUDA-only construct is correctly kept out of the ROCm build. {body} is the construct.
GUARDS = {
    "ifndef_use_rocm": "#ifndef USE_ROCM\n{body}\n#endif\n",
    "if_not_defined": "#if !defined(USE_ROCM)\n{body}\n#endif\n",
    "else_of_ifdef_use_rocm": "#ifdef USE_ROCM\nint rocm_side = 0;\n#else\n{body}\n#endif\n",
    "else_of_hip_or_rocm": (
        "#if defined(__HIP_PLATFORM_AMD__) || defined(USE_ROCM)\nint r = 0;\n#else\n{body}\n#endif\n"
    ),
    "elif_chain": "#if defined(USE_ROCM)\nint r = 0;\n#elif defined(ENABLE_FP8)\n{body}\n#else\n{body}\n#endif\n",
    "nested_inside_cuda_branch": "#ifndef __HIP_PLATFORM_AMD__\n#if defined(ENABLE_BF16)\n{body}\n#endif\n#endif\n",
    "not_hipcc": "#if !defined(__HIPCC__) && !defined(__HIP__)\n{body}\n#endif\n",
    "cuda_arch": "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800\n{body}\n#endif\n",
    "if_zero": "#if 0\n{body}\n#endif\n",
}


def write(root: Path, files: dict[str, str | bytes]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text)
    return root


def scan_files(tmp_path: Path, files: dict[str, str | bytes], **kwargs) -> list[Failure]:
    return scan_repo(write(tmp_path / "repo", files), **kwargs)


def summary(findings: list[Failure]) -> list[tuple[str, str, int, str]]:
    return [(f.kind, f.file or "", f.line or 0, f.symbol or "") for f in findings]
