"""CUDA runtime API names and their HIP spellings (the same calls and types under hip* names).

Facts from the HIP runtime API; repos that hipify at build time get these renames from torch's hipify,
repos built without it need them from a compat header. `cudaLaunchKernelEx` has no HIP 6.x counterpart
and is handled by LAUNCH_EX below.
"""

from __future__ import annotations

from agent.proposers.rules.runtime_table import DEV_ATTR_TAIL, SAME_TAIL

# cudaX -> hipX for every audited X (runtime_table.py); below, the names HIP spells differently.
RUNTIME: dict[str, str] = {f"cuda{tail}": f"hip{tail}" for tail in SAME_TAIL.split()}
RUNTIME.update({f"cudaDevAttr{tail}": f"hipDeviceAttribute{tail}" for tail in DEV_ATTR_TAIL.split()})
RUNTIME.update(
    {
        "cudaDeviceAttr": "hipDeviceAttribute_t",
        "cudaDeviceProp": "hipDeviceProp_t",
        "cudaPointerAttributes": "hipPointerAttribute_t",
        "cudaDevAttrMultiProcessorCount": "hipDeviceAttributeMultiprocessorCount",
        "cudaDevAttrMaxSharedMemoryPerBlockOptin": "hipDeviceAttributeSharedMemPerBlockOptin",
    }
)
# Launch-with-attributes: HIP 6.x has no cudaLaunchKernelEx. Its attributes (programmatic dependent launch,
# clusters, ...) are scheduling requests ROCm cannot honour, so the ROCm branch launches the kernel with
# the same grid, block, shared memory and stream and drops them.
LAUNCH_EX_NAMES = (
    "cudaLaunchKernelEx",
    "cudaLaunchConfig_t",
    "cudaLaunchAttribute",
    "cudaLaunchAttributeProgrammaticStreamSerialization",
    "cudaLaunchAttributeValue",
)
LAUNCH_EX = """\
// cudaLaunchKernelEx: HIP has no launch-attribute API. The attributes (programmatic dependent launch,
// clusters) are scheduling requests ROCm cannot honour: they are dropped and the kernel is launched with
// the same grid, block, dynamic shared memory and stream.
enum cudaLaunchAttributeID {
  cudaLaunchAttributeIgnore = 0,
  cudaLaunchAttributeProgrammaticStreamSerialization = 1,
  cudaLaunchAttributeClusterDimension = 2,
};
union cudaLaunchAttributeValue {
  int programmaticStreamSerializationAllowed;
  struct { unsigned x, y, z; } clusterDim;
};
struct cudaLaunchAttribute {
  cudaLaunchAttributeID id;
  cudaLaunchAttributeValue val;
};
struct cudaLaunchConfig_t {
  dim3 gridDim;
  dim3 blockDim;
  size_t dynamicSmemBytes;
  hipStream_t stream;
  cudaLaunchAttribute* attrs;
  unsigned numAttrs;
};
template <typename... Params, typename... Args>
static inline hipError_t cudaLaunchKernelEx(const cudaLaunchConfig_t* config, void (*kernel)(Params...),
                                            Args&&... args) {
  hipLaunchKernelGGL(kernel, config->gridDim, config->blockDim, config->dynamicSmemBytes, config->stream,
                     static_cast<Params>(args)...);
  return hipGetLastError();
}
"""

# Runtime calls that take a kernel: CUDA's C++ API has templates over the kernel's type, HIP 6.4 only
# `const void*` ("no matching function" for a kernel name). name -> (HIP call, parameters, arguments).
KERNEL_CALLS = {
    "cudaFuncSetAttribute": (
        "hipFuncSetAttribute",
        "F* func, hipFuncAttribute attr, int value",
        "attr, value",
    ),
    "cudaFuncSetCacheConfig": ("hipFuncSetCacheConfig", "F* func, hipFuncCache_t config", "config"),
}


def kernel_call_shim(name: str) -> str:
    """A template taking the kernel as CUDA's does, passing it to the HIP call as `const void*`."""
    hip, params, rest = KERNEL_CALLS[name]
    return (
        f"template <typename F>\ninline hipError_t rocm_compat_{name}({params}) {{\n"
        f"  return {hip}(reinterpret_cast<const void*>(func), {rest});\n}}\n#define {name} rocm_compat_{name}\n"
    )
