"""What torch's build-time hipify translates, so a hipifying profile is not told about it.

Facts from torch/utils/hipify/cuda_to_hip_mappings.py (read, not copied): CUDA_INCLUDE_MAP renames
the runtime/fp16/bf16/library headers and a fixed list of cub headers to hipcub/hipcub.hpp;
CUDA_TYPE_NAME_MAP renames `__nv_bfloat16`/`__nv_bfloat162` (recent torch); the identifier maps rename
the `cuda*` runtime API, cuBLAS and the classic driver API. Not translated, so still reported:
`cuda_fp8.h`, `cudaTypedefs.h`, `cuda/std/*`, cub headers outside that list, warp intrinsics and
warp width, warp-size literals, inline PTX, fp8 types, and the TMA/driver-entry-point API
(`cuGetProcAddress`, `cuTensorMapEncode*`, `CUtensorMap`), and launch attributes / PDL
(`cudaLaunchKernelEx`, `cudaLaunchConfig_t`, `cudaLaunchAttribute*`, `cudaGridDependencySynchronize`).
"""

from __future__ import annotations

from tools.records import Failure
from tools.scan.catalog import LAUNCH_ATTRIBUTE_APIS

HIPIFIED_HEADERS = frozenset(
    {
        "cuda.h",
        "cuda_runtime.h",
        "cuda_runtime_api.h",
        "cuda_profiler_api.h",
        "channel_descriptor.h",
        "device_functions.h",
        "driver_types.h",
        "library_types.h",
        "cuComplex.h",
        "cuda_fp16.h",
        "cuda_bf16.h",
        "cuda_texture_types.h",
        "cooperative_groups.h",
        "vector_types.h",
        "cublas.h",
        "cublas_v2.h",
        "cublasLt.h",
        "curand.h",
        "curand_kernel.h",
        "cusparse.h",
        "cufft.h",
        "nccl.h",
        "nvrtc.h",
        "nvToolsExt.h",
        "nvtx3/nvtx3.hpp",
        "nvml.h",
        "cub/util_allocator.cuh",
        "cub/block/block_reduce.cuh",
        "cub/block/block_raking_layout.cuh",
        "cub/cub.cuh",
        "cub/config.cuh",
        "cub/util_ptx.cuh",
        "cub/util_type.cuh",
        "cub/device/device_run_length_encode.cuh",
        "cub/block/block_load.cuh",
        "cub/block/block_store.cuh",
        "cub/block/block_scan.cuh",
        "cub/device/device_radix_sort.cuh",
        "cub/device/device_reduce.cuh",
        "cub/device/device_scan.cuh",
        "cub/device/device_select.cuh",
    }
)
HIPIFIED_TYPES = frozenset({"__nv_bfloat16", "__nv_bfloat162"})
_UNMAPPED_DRIVER = ("cuGetProcAddress", "cuTensorMap", "CUtensorMap", "PFN_", "cudaGetDriverEntryPoint")


def hipify_translates(finding: Failure) -> bool:
    """True when torch's hipify rewrites this construct during the build."""
    kind, symbol = finding.kind, finding.symbol or ""
    if kind in ("cuda_header", "cub"):
        return symbol in HIPIFIED_HEADERS
    if kind == "bf16_type":
        return symbol in HIPIFIED_TYPES
    if kind == "cublas":
        return True
    if kind == "stream_api":
        return not symbol.startswith(_UNMAPPED_DRIVER + LAUNCH_ATTRIBUTE_APIS)
    return False
