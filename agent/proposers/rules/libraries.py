"""CUDA math/tool libraries with a HIP counterpart that mirrors their API under another prefix (hipify's
renames): the header maps to the HIP library's header plus one alias per library name the code uses.

Only cuBLASLt (hipblaslt) and NVRTC (hiprtc) are installed in rocport/rocm-build:6.4; the others need their
ROCm package, which the environment decline names when hipcc cannot find the header.
"""

from __future__ import annotations

import re

from agent.proposers.rules.cpp import line_platforms

# CUDA header -> (HIP header, [(CUDA name prefix, HIP name prefix)], ROCm package providing the header)
LIBRARIES: dict[str, tuple[str, list[tuple[str, str]], str]] = {
    "curand_kernel.h": (
        "hiprand/hiprand_kernel.h",
        [("curand", "hiprand"), ("CURAND_", "HIPRAND_")],
        "hiprand",
    ),
    "curand.h": ("hiprand/hiprand.h", [("curand", "hiprand"), ("CURAND_", "HIPRAND_")], "hiprand"),
    "cublas_v2.h": ("hipblas/hipblas.h", [("cublas", "hipblas"), ("CUBLAS_", "HIPBLAS_")], "hipblas"),
    "cublas.h": ("hipblas/hipblas.h", [("cublas", "hipblas"), ("CUBLAS_", "HIPBLAS_")], "hipblas"),
    "cublasLt.h": (
        "hipblaslt/hipblaslt.h",
        [("cublasLt", "hipblasLt"), ("CUBLASLT_", "HIPBLASLT_")],
        "hipblaslt",
    ),
    "cusparse.h": (
        "hipsparse/hipsparse.h",
        [("cusparse", "hipsparse"), ("CUSPARSE_", "HIPSPARSE_")],
        "hipsparse",
    ),
    "cufft.h": ("hipfft/hipfft.h", [("cufft", "hipfft"), ("CUFFT_", "HIPFFT_")], "hipfft"),
    "cuComplex.h": (
        "hip/hip_complex.h",
        [
            ("cuC", "hipC"),
            ("cuFloatComplex", "hipFloatComplex"),
            ("cuDoubleComplex", "hipDoubleComplex"),
            ("cuComplex", "hipComplex"),
            ("make_cu", "make_hip"),
        ],
        "hip-dev",
    ),
    "nvrtc.h": ("hip/hiprtc.h", [("nvrtc", "hiprtc"), ("NVRTC_", "HIPRTC_")], "hip-dev"),
    "nvToolsExt.h": ("roctracer/roctx.h", [("nvtx", "roctx")], "roctracer"),
    "nvtx3/nvToolsExt.h": ("roctracer/roctx.h", [("nvtx", "roctx")], "roctracer"),
}
# Names whose ROCm spelling is not the prefix swap (roctx ends ranges with Stop and spells the id type
# in snake case).
RENAMED = {"nvtxRangeEnd": "roctxRangeStop", "nvtxRangeId_t": "roctx_range_id_t"}
# ROCm header folder -> the package that installs it (for the "install it" decline).
PACKAGES = {
    "hiprand/": "hiprand",
    "rocrand/": "rocrand",
    "hipblas/": "hipblas",
    "hipblaslt/": "hipblaslt",
    "hipsparse/": "hipsparse",
    "hipfft/": "hipfft",
    "roctracer/": "roctracer",
    "hipcub/": "hipcub",
    "rocprim/": "rocprim",
    "hipsolver/": "hipsolver",
    "rccl/": "rccl",
}


def library_names(text: str, prefixes: list[tuple[str, str]]) -> set[str]:
    """Names with one of the library's CUDA prefixes on lines both toolchains compile, minus macros the
    text defines itself for both (an alias another file defines only under USE_ROCM still counts: a header
    whose macros use cuCreal needs its own alias, whatever its includer defines)."""
    pattern = re.compile(r"\b(?:" + "|".join(re.escape(c) for c, _ in prefixes) + r")\w*")
    define = re.compile(r"^\s*#\s*define\s+(\w+)")
    lines = text.splitlines()
    out: set[str] = set()
    own: set[str] = set()
    for line, where in zip(lines, line_platforms(lines), strict=True):
        if where != "both":
            continue
        own |= set(define.findall(line))
        if not line.lstrip().startswith(("//", "*", "/*", "#include")):
            out |= set(pattern.findall(line.split("//", 1)[0]))
    return out - own


def library_lines(header: str, text: str) -> list[str]:
    """ROCm lines for a library header: the HIP header and one alias per name `text` uses."""
    hip, prefixes, _ = LIBRARIES[header]
    names = library_names(text, prefixes)
    # longest prefix first: cublasLt names belong to hipblasLt, not to hipblas
    ordered = sorted(prefixes, key=lambda p: -len(p[0]))
    aliases = [
        f"#define {n} {RENAMED.get(n) or next(h + n[len(c) :] for c, h in ordered if n.startswith(c))}"
        for n in sorted(names)
    ]
    return [f"#include <{hip}>", *aliases]


def package_of(header: str) -> str | None:
    """The ROCm package that installs a missing ROCm header, when known."""
    return next((pkg for folder, pkg in PACKAGES.items() if header.startswith(folder)), None)
