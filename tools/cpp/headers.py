"""Header facts shared by scan and the rules: CUDA headers and their HIP equivalents, ROCm headers,
and the CUDA-only libraries whose headers mean "exclude this file from the ROCm build or port it".

Facts (not code) from the HIP porting guide and hipify's header maps.
"""

from __future__ import annotations

from functools import lru_cache

CUDA_TO_HIP_HEADERS: dict[str, str | None] = {
    "cuda_runtime.h": "hip/hip_runtime.h",
    "cuda_runtime_api.h": "hip/hip_runtime_api.h",
    "cuda.h": None,
    "cudaTypedefs.h": None,
    "cuda_bf16.h": "hip/hip_bf16.h",
    "cuda_bf16.hpp": "hip/hip_bf16.h",
    "cuda_fp16.h": "hip/hip_fp16.h",
    "cuda_fp16.hpp": "hip/hip_fp16.h",
    "cuda_fp8.h": "hip/hip_fp8.h",
    "cuda_fp8.hpp": "hip/hip_fp8.h",
    "cuda_fp6.h": None,
    "cuda_fp4.h": None,
    "cuda_pipeline.h": None,
    "cuda_pipeline_primitives.h": None,
    "cuda_awbarrier.h": None,
    "cuda_awbarrier_primitives.h": None,
    "cuda_profiler_api.h": "hip/hip_runtime_api.h",
    "cuda_occupancy.h": None,
    "cuda_device_runtime_api.h": None,
    "cuda_texture_types.h": "hip/hip_texture_types.h",
    "device_launch_parameters.h": "hip/hip_runtime.h",
    "cooperative_groups.h": "hip/hip_cooperative_groups.h",
    "mma.h": None,
    "math_constants.h": "hip/hip_math_constants.h",  # the constants are spelled HIP_<X>, not CUDART_<X>
    "vector_types.h": "hip/hip_vector_types.h",
    "vector_functions.h": "hip/hip_vector_types.h",
    "cuComplex.h": "hip/hip_complex.h",
    "curand.h": "hiprand/hiprand.h",
    "curand_kernel.h": "hiprand/hiprand_kernel.h",
    "cublas_v2.h": "hipblas/hipblas.h",
    "cublas.h": "hipblas/hipblas.h",
    "cublasLt.h": "hipblaslt/hipblaslt.h",
    "cusparse.h": "hipsparse/hipsparse.h",
    "cufft.h": "hipfft/hipfft.h",
    "cudnn.h": None,
    "nvrtc.h": "hip/hiprtc.h",
    "nccl.h": "rccl/rccl.h",
    "nvToolsExt.h": "roctracer/roctx.h",
    "nvml.h": None,
    "cusolverDn.h": "hipsolver/hipsolver.h",
}
"""CUDA toolkit header -> the HIP header declaring the same API; None: no 1:1 HIP header."""
CUDA_HEADER_PREFIXES = ("cooperative_groups/", "crt/", "nvtx3/", "cuda/")
CUDA_STD_TO_STD = frozenset(
    {
        "type_traits",
        "limits",
        "cstdint",
        "utility",
        "array",
        "tuple",
        "functional",
        "cmath",
        "climits",
        "cstddef",
        "bit",
        "span",
        "cassert",
        "initializer_list",
        "ratio",
        "complex",
        "optional",
        "variant",
    }
)
"""`cuda/std/<x>` headers whose host-std `<x>` serves the same purpose on ROCm."""
ROCM_HEADER_PREFIXES = (
    "hip/",
    "hipcub/",
    "rocprim/",
    "hiprand/",
    "rocrand/",
    "hipblas",
    "rocblas",
    "hip_",
    "rocwmma/",
    "hipsparse",
    "hipfft",
    "hipsolver",
    "rccl/",
    "roctracer/",
    "ck/",
    "ck_tile/",
    "aiter/",
)
"""Headers only a ROCm toolchain ships: a file including them unguarded is ROCm-only."""
CUDA_ONLY_LIBRARIES: dict[str, str] = {
    "cutlass/": "CUTLASS",
    "cute/": "CuTe",
    "flashinfer/": "FlashInfer",
    "deep_gemm/": "DeepGEMM",
    "cudnn_frontend": "cuDNN frontend",
    "cutlass_extensions/": "CUTLASS extensions",
    "flash_mla/": "FlashMLA",
    "nvshmem": "NVSHMEM",
    "deep_ep/": "DeepEP",
    "tensorrt_llm/": "TensorRT-LLM",
}
"""Header prefix -> CUDA-only library with no ROCm build: the including file cannot compile for ROCm."""


def hip_header_for(header: str) -> str | None:
    """The HIP header replacing a CUDA toolkit header, or None when there is no 1:1 one."""
    return CUDA_TO_HIP_HEADERS.get(header)


def is_cuda_toolkit_header(header: str) -> bool:
    """True for a header of the CUDA toolkit itself (runtime, math, libraries, libcu++, CUB)."""
    return header in CUDA_TO_HIP_HEADERS or header.startswith((*CUDA_HEADER_PREFIXES, "cub/"))


def is_rocm_header(header: str) -> bool:
    """True for a header only a ROCm toolchain ships (hip/, hipcub/, rocprim/, ...)."""
    return header.startswith(ROCM_HEADER_PREFIXES)


@lru_cache(maxsize=4096)
def cuda_only_library(header: str) -> str | None:
    """The CUDA-only library (CUTLASS, CuTe, FlashInfer, DeepGEMM, ...) a header belongs to, or None."""
    for prefix, library in CUDA_ONLY_LIBRARIES.items():
        if header.startswith(prefix):
            return library
    return None
