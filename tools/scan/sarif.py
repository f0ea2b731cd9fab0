"""SARIF 2.1.0 for GitHub code scanning: one rule per kind, one result per finding.

GitHub reads tool.driver.name/rules, result ruleId/level/message/locations (a repo-relative
artifactLocation.uri and a region with startLine/startColumn) and partialFingerprints to follow a
result across commits; the fingerprint here is the finding's signature, which holds no line number.
"""

from __future__ import annotations

from tools.records import Failure

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (tools/__init__.py)
if TYPE_CHECKING:
    from typing import Any

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_VERSION = "2.1.0"

RULE_HELP: dict[str, str] = {
    "cuda_header": "A CUDA toolkit header is included outside a ROCm branch. Add an `#ifdef USE_ROCM` "
    "branch with the HIP header (hip/hip_runtime.h, hip/hip_bf16.h, ...); leave the CUDA "
    "branch untouched. The driver API (cuda.h) maps to hip/hip_runtime.h plus one alias per driver name "
    "in use, when HIP has every one (TMA, launch attributes and multicast have none).",
    "cub": "CUB is CUDA-only. Include hipcub/hipcub.hpp and alias the namespace under USE_ROCM.",
    "cuda_std": "libcu++ (cuda/std/...) is CUDA-only. Host-compatible traits map to the std headers; "
    "cuda::atomic/atomic_ref map to a compat-header shim on __hip_atomic_* (no libhipcxx in ROCm 6.4); "
    "barriers, pipelines and semaphores need libhipcxx or an exclusion.",
    "warp_intrinsic": "CUDA warp intrinsic. Route it through one compat macro; ROCm shuffles default to "
    "width 64, so a kernel that treats 32 lanes as a warp must pass width 32.",
    "warp_size": "A literal assumes 32 lanes per warp. Derive lane masks, `% 32`, `>> 5` and `[32]` "
    "extents from one warp-size source; CDNA wavefronts have 64 lanes.",
    "inline_ptx": "Inline PTX does not assemble for AMD GPUs. Bit-logic PTX becomes plain C; tensor-core "
    "PTX (mma, ldmatrix, cp.async) needs an MFMA rewrite or an exclusion.",
    "bf16_type": "CUDA bf16 type. Use __hip_bfloat16 through a typedef under USE_ROCM (not the rocBLAS "
    "hip_bfloat16 the compiler suggests).",
    "fp16_type": "CUDA-specific half type. Use __half/__half2 from hip/hip_fp16.h under USE_ROCM.",
    "fp8_type": "CUDA fp8 type. gfx942's fp8 is FNUZ (bias 8, +-240, 0x80 NaN), so HIP's FNUZ types change "
    "values and bytes: keep NVIDIA's OCP encoding in software (rocport's compat-header shim); gfx950 has OCP "
    "e4m3fn natively.",
    "stream_api": "CUDA runtime or driver API outside a ROCm branch. Runtime calls have hip* twins; the "
    "driver entry-point/TMA API (cuGetProcAddress, cuTensorMapEncode*) has none: guard it.",
    "cublas": "cuBLAS API. Use hipBLAS (hipblas* names, hipDataType on ROCm 7).",
    "cuda_only_dep": "A CUDA-only Python dependency or gate runs on ROCm. Guard by platform first, "
    "catch import errors, and fall back to triton/torch.",
    "fp8_layout": "float8_e4m3fn with no fnuz handling. On gfx942 normalise e4m3fn weights and scales "
    "after load; never on gfx950.",
}
_LEVELS = {"inline_ptx": "warning", "warp_size": "warning", "fp8_layout": "warning"}


def _rule(kind: str) -> dict[str, Any]:
    text = RULE_HELP.get(kind, f"{kind}: a CUDA-only construct that a ROCm build trips on.")
    return {
        "id": kind,
        "name": kind,
        "shortDescription": {"text": text.split(". ")[0].rstrip(".") + "."},
        "fullDescription": {"text": text},
        "help": {"text": text, "markdown": text},
        "defaultConfiguration": {"level": _LEVELS.get(kind, "error")},
        "properties": {"tags": ["rocm", "portability"]},
    }


def _result(f: Failure, rule_index: dict[str, int]) -> dict[str, Any]:
    fix = f.facts.get("fix_family", "")
    region = {"startLine": max(1, f.line or 1), "startColumn": max(1, f.column or 1)}
    return {
        "ruleId": f.kind,
        "ruleIndex": rule_index[f.kind],
        "level": _LEVELS.get(f.kind, "error"),
        "message": {"text": f"{f.message} (fix family: {fix})" if fix else f.message},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": f.file or "", "uriBaseId": "%SRCROOT%"},
                    "region": region,
                }
            }
        ],
        "partialFingerprints": {"rocportSignature/v1": f.signature},
        "properties": {"symbol": f.symbol, "fixFamily": fix},
    }


def to_sarif(findings: list[Failure], *, version: str = "0") -> dict[str, Any]:
    """A SARIF 2.1.0 log (as a dict) with one run of tool `rocport`."""
    kinds = sorted({f.kind for f in findings})
    rule_index = {k: i for i, k in enumerate(kinds)}
    return {
        "$schema": SARIF_SCHEMA,
        "version": SARIF_VERSION,
        "runs": [
            {
                "tool": {
                    "driver": {"name": "rocport", "version": version, "rules": [_rule(k) for k in kinds]}
                },
                "originalUriBaseIds": {
                    "%SRCROOT%": {"description": {"text": "The scanned repository root."}}
                },
                "results": [_result(f, rule_index) for f in findings],
                "columnKind": "unicodeCodePoints",
            }
        ],
    }
