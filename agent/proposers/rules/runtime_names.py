"""CUDA runtime API names and their HIP spellings (the same calls and types under hip* names).

Facts from the HIP runtime API; repos that hipify at build time get these renames from torch's hipify,
repos built without it need them from a compat header. `cudaLaunchKernelEx` has no HIP 6.x counterpart
and is handled by LAUNCH_EX below.
"""

from __future__ import annotations

_SAME_TAIL = """
Stream_t Event_t Error_t Success GetDevice SetDevice GetDeviceCount DeviceSynchronize DeviceGetAttribute
GetDeviceProperties Malloc Free MallocAsync FreeAsync MallocHost FreeHost HostAlloc MallocManaged
Memcpy MemcpyAsync Memcpy2D Memcpy2DAsync MemcpyPeer MemcpyPeerAsync Memset MemsetAsync MemcpyKind
MemcpyHostToDevice MemcpyDeviceToHost MemcpyDeviceToDevice MemcpyHostToHost MemcpyDefault
MemcpyToSymbol MemcpyToSymbolAsync MemcpyFromSymbol GetSymbolAddress
StreamCreate StreamCreateWithFlags StreamCreateWithPriority StreamDestroy StreamSynchronize StreamWaitEvent
StreamQuery StreamNonBlocking StreamDefault StreamIsCapturing StreamCaptureStatus StreamCaptureStatusNone
StreamCaptureStatusActive StreamCaptureStatusInvalidated StreamBeginCapture StreamEndCapture
StreamCaptureModeGlobal StreamCaptureModeThreadLocal StreamCaptureModeRelaxed
EventCreate EventCreateWithFlags EventDestroy EventRecord EventSynchronize EventQuery EventElapsedTime
EventDisableTiming EventDefault EventBlockingSync EventInterprocess
GetLastError PeekAtLastError GetErrorString GetErrorName ErrorNotReady ErrorInvalidValue
ErrorMemoryAllocation ErrorNotSupported
FuncSetAttribute FuncGetAttributes FuncAttributes FuncAttributeMaxDynamicSharedMemorySize
FuncAttributePreferredSharedMemoryCarveout FuncSetCacheConfig FuncCachePreferShared FuncCachePreferL1
OccupancyMaxActiveBlocksPerMultiprocessor OccupancyMaxPotentialBlockSize LaunchKernel LaunchCooperativeKernel
PointerGetAttributes HostRegister HostUnregister HostGetDevicePointer
HostRegisterDefault HostRegisterMapped HostRegisterPortable HostAllocDefault HostAllocMapped HostAllocPortable
IpcMemHandle_t IpcEventHandle_t IpcGetMemHandle IpcOpenMemHandle IpcCloseMemHandle IpcMemLazyEnablePeerAccess
IpcGetEventHandle IpcOpenEventHandle DeviceCanAccessPeer DeviceEnablePeerAccess DeviceDisablePeerAccess
Graph_t GraphExec_t GraphLaunch GraphInstantiate GraphDestroy GraphExecDestroy
MemGetInfo DriverGetVersion RuntimeGetVersion DeviceReset DeviceSetLimit DeviceGetLimit LimitStackSize
TextureObject_t CreateTextureObject DestroyTextureObject ResourceDesc TextureDesc ResourceType ResourceTypeLinear
ResourceTypeArray ResourceTypePitch2D TextureReadMode ReadModeElementType ReadModeNormalizedFloat
TextureFilterMode FilterModePoint FilterModeLinear TextureAddressMode AddressModeClamp AddressModeWrap
AddressModeBorder AddressModeMirror CreateChannelDesc ChannelFormatDesc ChannelFormatKind ChannelFormatKindFloat
ChannelFormatKindSigned ChannelFormatKindUnsigned Array_t MallocArray FreeArray Memcpy2DToArray SurfaceObject_t
CreateSurfaceObject DestroySurfaceObject PitchedPtr Extent Memcpy3D Memcpy3DParms MallocPitch
StreamPerThread StreamLegacy StreamGetFlags StreamGetPriority StreamAddCallback LaunchHostFunc
DeviceGetStreamPriorityRange MemPrefetchAsync MemAdvise DeviceGetPCIBusId DeviceGetByPCIBusId ChooseDevice
OccupancyMaxActiveBlocksPerMultiprocessorWithFlags HostAllocWriteCombined HostGetFlags SetDeviceFlags
GetDeviceFlags DeviceScheduleBlockingSync DeviceMapHost ProfilerStart ProfilerStop EventRecordWithFlags
MemcpyFromSymbolAsync ErrorPeerAccessAlreadyEnabled ErrorInvalidDevice ErrorInvalidConfiguration
ErrorLaunchFailure ErrorNoDevice ErrorInvalidDevicePointer
"""
# cudaX -> hipX for every X above; attributes are the one family that is renamed as well.
RUNTIME: dict[str, str] = {f"cuda{tail}": f"hip{tail}" for tail in _SAME_TAIL.split()}
RUNTIME.update(
    {
        "cudaDeviceAttr": "hipDeviceAttribute_t",
        "cudaDeviceProp": "hipDeviceProp_t",
        "cudaPointerAttributes": "hipPointerAttribute_t",
        "cudaDevAttrComputeCapabilityMajor": "hipDeviceAttributeComputeCapabilityMajor",
        "cudaDevAttrComputeCapabilityMinor": "hipDeviceAttributeComputeCapabilityMinor",
        "cudaDevAttrMultiProcessorCount": "hipDeviceAttributeMultiprocessorCount",
        "cudaDevAttrMaxSharedMemoryPerBlockOptin": "hipDeviceAttributeSharedMemPerBlockOptin",
        "cudaDevAttrMaxSharedMemoryPerMultiprocessor": "hipDeviceAttributeMaxSharedMemoryPerMultiprocessor",
        "cudaDevAttrMaxThreadsPerBlock": "hipDeviceAttributeMaxThreadsPerBlock",
        "cudaDevAttrL2CacheSize": "hipDeviceAttributeL2CacheSize",
        "cudaDevAttrWarpSize": "hipDeviceAttributeWarpSize",
        "cudaDevAttrClockRate": "hipDeviceAttributeClockRate",
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
