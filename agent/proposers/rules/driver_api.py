"""`#include <cuda.h>` (the CUDA driver API) on ROCm: HIP's runtime header declares the driver calls HIP
has (hipModule*, hipCtx*, hipDeviceptr_t, ...) under hip* names, so a repo that uses only those gets the
HIP runtime plus one `#define` per driver name it uses; a name HIP lacks is declined by name.

Each HIP spelling below is declared by ROCm 6.4's hip_runtime.h (a test compiles them all in the image).
"""

from __future__ import annotations

import re

from agent.proposers.rules.cpp import line_platforms

_SAME = """
Init DriverGetVersion DeviceGet DeviceGetName DeviceGetAttribute DeviceTotalMem DeviceComputeCapability
CtxCreate CtxDestroy CtxGetCurrent CtxSetCurrent CtxPushCurrent CtxPopCurrent CtxSynchronize CtxGetDevice
DevicePrimaryCtxRetain DevicePrimaryCtxRelease ModuleLoad ModuleLoadData ModuleLoadDataEx ModuleUnload
ModuleGetFunction ModuleGetGlobal MemcpyHtoD MemcpyDtoH MemcpyDtoD MemcpyHtoDAsync MemcpyDtoHAsync
MemsetD8 MemsetD32 MemGetInfo MemGetAddressRange MemAllocHost PointerGetAttribute FuncGetAttribute
StreamDestroy StreamSynchronize StreamWaitEvent EventDestroy EventRecord EventSynchronize EventElapsedTime
"""
DRIVER: dict[str, str] = {f"cu{tail}": f"hip{tail}" for tail in _SAME.split()}
DRIVER.update(
    {
        "CUdeviceptr": "hipDeviceptr_t",
        "CUstream": "hipStream_t",
        "CUevent": "hipEvent_t",
        "CUresult": "hipError_t",
        "CUdevice": "hipDevice_t",
        "CUcontext": "hipCtx_t",
        "CUmodule": "hipModule_t",
        "CUfunction": "hipFunction_t",
        "CUdevice_attribute": "hipDeviceAttribute_t",
        "CUfunction_attribute": "hipFunction_attribute",
        "CUjit_option": "hipJitOption",
        "CUDA_SUCCESS": "hipSuccess",
        "CUDA_ERROR_INVALID_VALUE": "hipErrorInvalidValue",
        "CUDA_ERROR_OUT_OF_MEMORY": "hipErrorOutOfMemory",
        "CUDA_ERROR_NOT_INITIALIZED": "hipErrorNotInitialized",
        "CUDA_ERROR_DEINITIALIZED": "hipErrorDeinitialized",
        "CUDA_ERROR_NOT_FOUND": "hipErrorNotFound",
        "CUDA_ERROR_NOT_READY": "hipErrorNotReady",
        "CUDA_ERROR_INVALID_CONTEXT": "hipErrorInvalidContext",
        "CUDA_ERROR_INVALID_HANDLE": "hipErrorInvalidHandle",
        "CU_STREAM_DEFAULT": "hipStreamDefault",
        "CU_STREAM_NON_BLOCKING": "hipStreamNonBlocking",
        "CU_EVENT_DEFAULT": "hipEventDefault",
        "CU_EVENT_DISABLE_TIMING": "hipEventDisableTiming",
        "CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT": "hipDeviceAttributeMultiprocessorCount",
        "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR": "hipDeviceAttributeComputeCapabilityMajor",
        "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR": "hipDeviceAttributeComputeCapabilityMinor",
        "CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK": "hipDeviceAttributeMaxThreadsPerBlock",
        "CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN": "hipDeviceAttributeSharedMemPerBlockOptin",
        "CU_DEVICE_ATTRIBUTE_WARP_SIZE": "hipDeviceAttributeWarpSize",
        # same call under another name (HIP's cu-style spelling is missing or differs)
        "cuDeviceGetCount": "hipGetDeviceCount",
        "cuLaunchKernel": "hipModuleLaunchKernel",
        "cuMemAlloc": "hipMalloc",
        "cuMemFree": "hipFree",
        "cuMemFreeHost": "hipHostFree",
        "cuStreamCreate": "hipStreamCreateWithFlags",
        "cuEventCreate": "hipEventCreateWithFlags",
        "cuGetErrorString": "hipDrvGetErrorString",
        "cuGetErrorName": "hipDrvGetErrorName",
    }
)
# Driver facilities with no HIP form at all: the reason a port needs a human.
NO_HIP = {
    "TensorMap": "tensor-memory-accelerator descriptors (TMA, sm_90+) have no AMD hardware counterpart",
    "LaunchKernelEx": "launch attributes (clusters, programmatic dependent launch) have no HIP driver API",
    "LaunchConfig": "launch attributes (clusters, programmatic dependent launch) have no HIP driver API",
    "Multicast": "NVLink multicast objects have no HIP counterpart",
}
_DRIVER_NAME = re.compile(r"\b(?:cu[A-Z]\w*|CU[a-z]\w*|CU_[A-Z0-9_]+|CUDA_(?:SUCCESS|ERROR_\w+))\b")
_COMPLEX = re.compile(r"cu(?:C[a-z]+|(?:Float|Double)?Complex\w*)")  # cuComplex.h, not the driver API
_OWN = re.compile(r"^\s*#\s*define\s+(\w+)|\btypedef\b[^;]*?\b(\w+)\s*;|\busing\s+(\w+)\s*=", re.MULTILINE)


def driver_names(text: str) -> set[str]:
    """Driver-API-looking names on lines both toolchains compile, minus the file's own macros and types."""
    lines = text.splitlines()
    own = {n for m in _OWN.finditer(text) for n in m.groups() if n}
    out: set[str] = set()
    for line, where in zip(lines, line_platforms(lines), strict=True):
        if where == "both" and not line.lstrip().startswith(("//", "*", "/*")):
            out |= set(_DRIVER_NAME.findall(line.split("//", 1)[0]))
    return {n for n in out - own if not _COMPLEX.fullmatch(n)}


def unmapped_reason(names: set[str]) -> str | None:
    """Why a repo's driver-API use cannot be mapped (the names HIP lacks, each with its reason), or None."""
    missing = sorted(n for n in names if n not in DRIVER)
    if not missing:
        return None
    why = sorted({r for n in missing for key, r in NO_HIP.items() if key in n})
    return (
        f"cuda.h is the CUDA driver API; this repo uses {', '.join(missing)}, which HIP 6.4 does not provide "
        f"under a mapped name{' (' + '; '.join(why) + ')' if why else ''}: needs a human or the LLM"
    )


def driver_lines(names: set[str]) -> list[str]:
    """ROCm lines for `#include <cuda.h>`: the HIP runtime plus one alias per driver name in use."""
    return [
        "#include <hip/hip_runtime.h>",
        *(f"#define {n} {DRIVER[n]}" for n in sorted(names) if n in DRIVER),
    ]
