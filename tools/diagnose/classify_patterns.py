"""The message patterns classify.py sorts compiler diagnostics with: missing headers, CUDA-only
symbols, warp intrinsics, inline PTX, vendor types and the rest. Facts about compiler wording,
kept apart from the order in which classify.py tries them.
"""

from __future__ import annotations

import re

MISSING_HEADER = [
    re.compile(r"^'(?P<h>[^']+)' file not found"),  # clang
    re.compile(r"^(?P<h>\S+): No such file or directory"),  # gcc / nvcc's host preprocessor
    re.compile(r'^cannot open source file "(?P<h>[^"]+)"'),  # nvcc (EDG)
]
CUDA_HEADERS = re.compile(
    r"^(?:cuda[\w]*\.h|cuda\.h|cudaTypedefs\.h|cublas\w*\.h|cublasLt\.h|curand\w*\.h|cufft\w*\.h|cusparse\w*\.h"
    r"|cusolver\w*\.h|cudnn\w*\.h|nvrtc\.h|nvml\.h|nvToolsExt\w*\.h|nvtx3/.*|mma\.h|cooperative_groups(?:\.h|/.*)?"
    r"|crt/.*|device_launch_parameters\.h|device_functions\.h|sm_\d+_intrinsics\.h(?:pp)?|vector_types\.h"
    r"|math_constants\.h|vector_functions\.h|cuComplex\.h|device_(?:atomic|double)_functions\.h(?:pp)?"
    r"|sm_\d+_atomic_functions\.h(?:pp)?|builtin_types\.h|device_types\.h|host_defines\.h|host_config\.h|common_functions\.h"
    r"|driver_types\.h|texture_fetch_functions\.h|cuda_pipeline\w*\.h|cuda_awbarrier\w*\.h|nccl\.h|cutlass/.*|cute/.*)$"
)
HIP_HEADERS = re.compile(
    r"^(?:hip/|hipcub/|rocprim/|hipblas|rocblas|hipblaslt|rocwmma/|hiprand|rocrand|rccl|miopen"
    r"|hipfft|hipsparse|hipsolver|rocsolver|roctracer|roctx|amd_detail/)"
)
STREAM_HEADERS = re.compile(r"(?:MasqueradingAsCUDA|^ATen/hip/|^c10/hip/|HIPGuard|HIPStream|HIPContext)")

WARP_INTRINSICS = re.compile(
    r"^(?:__shfl(?:_up|_down|_xor)?_sync|__syncwarp|__activemask|__ballot_sync|__any_sync|__all_sync|__uni_sync"
    r"|__match_(?:any|all)_sync|__reduce_\w+_sync|__ldg|__ldcg|__ldca|__ldcs|__ldlu|__ldcv|__stcg|__stcs|__stwb|__stwt"
    r"|__lanemask_\w+|__fns|__nanosleep|__shfl(?:_up|_down|_xor)?)$"
)
WARP_SIZE = re.compile(
    r"^(?:CUB_WARP_THREADS|CUB_PTX_WARP_THREADS|WARP_SIZE|warpSize|kWarpSize|WARP_THREADS)$"
)
BF16 = re.compile(r"bfloat16|bf16|bfloat162", re.IGNORECASE)
FP16 = re.compile(
    r"^(?:__half2?|half2?|__nv_half\w*|__float2half\w*|__half2float\w*|__h\w+|hip_half\w*|__hip_half\w*)$|fp16"
    r"|half"
)
FP8 = re.compile(r"fp8|e4m3|e5m2|e8m0|fp4|e2m1", re.IGNORECASE)
UNDECLARED = [  # first match wins: a pattern that names the namespace comes before its bare form
    re.compile(r"^use of undeclared identifier '(?P<s>[^']+)'"),
    re.compile(r"^unknown type name '(?P<s>[^']+)'"),
    re.compile(r"^'(?P<s>[^']+)' was not declared in this scope"),
    re.compile(r"^'(?P<s>[^']+)' does not name a type"),
    re.compile(r'^identifier "(?P<s>[^"]+)" is undefined'),
    re.compile(r"^no matching function for call to '(?P<s>[^']+)'"),
    re.compile(r"^use of undeclared identifier '(?P<s>[^']+)'; did you mean"),
    re.compile(r'^namespace "(?P<ns>[\w:]+)" has no member "(?P<s>[^"]+)"'),
    re.compile(r"^no (?:member|type|template) named '(?P<s>[^']+)' in namespace '(?P<ns>[^']+)'"),
    re.compile(r"^no member named '(?P<s>[^']+)' in '(?P<ns>[^']+)'"),
    re.compile(r"^'(?P<s>[^']+)' is not a member of '(?P<ns>[^']+)'"),
    re.compile(r"^no template named '(?P<s>[^']+)'"),
]
PTX = re.compile(
    r"couldn't allocate (?:output|input) register|invalid (?:output|input)? ?constraint|invalid instruction"
    r"|unknown register name|invalid operand for instruction|instruction not supported|\bptx\b"
    r"|unrecognized instruction mnemonic|inline asm",
    re.IGNORECASE,
)
ASM_MNEMONIC = re.compile(r'asm\s*(?:volatile|__volatile__)?\s*\(\s*"\s*\{?\s*([a-z][\w.]*)')
BARE_MNEMONIC = re.compile(
    r"^([a-z][a-z0-9_]*\.[\w.]+|[a-z][a-z0-9_]+)\s"
)  # `lop3.b32 s2, ...` in <inline asm>
DIALECT = re.compile(
    r"missing 'typename' prior to dependent type name|use 'template' keyword to treat"
    r"|reference to __host__ function|calling a __host__ function|never produces a constant expression"
    r"|cannot be narrowed|ISO C\+\+|is not a constant expression|explicit specialization of .* in class scope"
    r"|declaration of .* shadows template parameter|non-type template argument is not a constant"
)
SMEM = re.compile(
    r"(?:hip|cuda)FuncSetAttribute|launch_bounds|local memory \(\d+\) exceeds limit|uses too much shared"
    r"|shared memory|LDS"
)
CUBLAS = re.compile(r"hipblas|cublas|rocblas", re.IGNORECASE)
STREAM = re.compile(
    r"getCurrentCUDAStream|getDefaultCUDAStream|CUDAStream|MasqueradingAsCUDA|CUDAGuard|cudaStream_t"
    r"|getCurrentHIPStream|HIPStream"
)
HIP_BUILTIN_DUP = re.compile(r"__float2bfloat16|__bfloat162float|__hip_|__half|__float2half|hip_bfloat16")
VENDOR_TYPE = re.compile(
    r"^(?:__half2?|half2?|__nv_bfloat16\w*|nv_bfloat16\w*|__nv_fp8\w*|__hip_bfloat16\w*)$"
)
NO_VIABLE = re.compile(
    r"no viable conversion from (?:returned value of type )?'(?P<f>[^']+)'(?: \(aka '(?P<fa>[^']+)'\))?"
    r" to (?:function return type )?'(?P<t>[^']+)'(?: \(aka '(?P<ta>[^']+)'\))?"
)
NO_KNOWN_CONVERSION = re.compile(r"no known conversion from '(?P<t>[^']+)'(?: \(aka '(?P<a>[^']+)'\))?")
CUDA_RUNTIME_CALL = re.compile(r"^cuda[A-Z]\w*$")
NCCL = re.compile(r"^[nr]ccl[A-Z_]\w*")
CONSTEXPR_INIT = re.compile(r"constexpr variable '(?P<s>[^']+)' must be initialized by a constant expression")
