"""What counts as a CUDA-only construct: headers, identifiers, PTX opcodes, and their fix families.

Kinds are the taxonomy of FAILURE_CLASSES.md; fix families name the rule that repairs them.
"""

from __future__ import annotations

from tools.cpp.headers import CUDA_HEADER_PREFIXES, CUDA_STD_TO_STD, CUDA_TO_HIP_HEADERS
from tools.regex_memo import compile_pattern


class Construct:
    """How one matched construct is reported (read only: one is shared by every match; a plain class,
    as the scan's other records: tools/scan/scanner.py's FileResult says why)."""

    __slots__ = ("fix_family", "hip_equivalent", "kind", "note")

    def __init__(self, kind: str, fix_family: str, note: str, hip_equivalent: str | None = None) -> None:
        self.kind = kind
        self.fix_family = fix_family
        self.note = note
        """Why it breaks on ROCm, one clause."""
        self.hip_equivalent = hip_equivalent

    def __repr__(self) -> str:
        return f"Construct({self.kind!r}, {self.fix_family!r})"


def classify_header(header: str) -> Construct | None:
    """The construct an `#include` of `header` is, or None when it is not CUDA-only."""
    if header.startswith("cub/"):
        return Construct("cub", "hipcub_alias", "CUB is CUDA-only; ROCm has hipCUB", "hipcub/hipcub.hpp")
    if header.startswith("cuda/"):
        tail = header.removeprefix("cuda/std/")
        if header.startswith("cuda/std/") and tail in CUDA_STD_TO_STD:
            return Construct("cuda_std", "cuda_std_to_std", "libcu++ is CUDA-only", f"<{tail}>")
        return Construct(
            "cuda_std",
            "libhipcxx_or_exclude",
            "libcu++ facility with no host-std equivalent (needs libhipcxx)",
        )
    if header in CUDA_TO_HIP_HEADERS or header.startswith(CUDA_HEADER_PREFIXES):
        hip = CUDA_TO_HIP_HEADERS.get(header)
        note = "CUDA toolkit header" + ("" if hip else " with no 1:1 HIP header")
        return Construct("cuda_header", "guard_cuda_headers", note, hip)
    return None


WARP_INTRINSICS = (
    "__shfl_sync",
    "__shfl_xor_sync",
    "__shfl_up_sync",
    "__shfl_down_sync",
    "__syncwarp",
    "__activemask",
    "__ballot_sync",
    "__any_sync",
    "__all_sync",
    "__uni_sync",
    "__match_any_sync",
    "__match_all_sync",
    "__reduce_add_sync",
    "__reduce_min_sync",
    "__reduce_max_sync",
    "__reduce_and_sync",
    "__reduce_or_sync",
    "__reduce_xor_sync",
)
# HIP ships __ldg (hip/amd_detail/hip_ldg.h), so it is not reported.

_DRIVER_FAMILIES = (
    "GetProcAddress",
    "TensorMap",
    "Init",
    "Device",
    "Ctx",
    "Module",
    "Mem",
    "Stream",
    "Event",
    "Launch",
    "Func",
    "Graph",
    "Link",
    "Occupancy",
    "Pointer",
    "GetError",
    "DriverGetVersion",
    "Array",
    "Tex",
    "Surf",
)
_WARP_TAILS = "|".join(name.removeprefix("__") for name in WARP_INTRINSICS)
IDENTIFIER_FAMILIES = (
    r"__(?:" + _WARP_TAILS + r"|nv_\w+|NV_E[45]M[23])\b",
    r"cu(?:da[A-Z]\w*|blas(?:Lt)?[A-Z]\w*|(?:" + "|".join(_DRIVER_FAMILIES) + r")\w*)\b",
    r"CU(?:B_(?:PTX_)?(?:LOG_)?WARP_THREADS|[a-z]\w*)\b",
    r"nv_bfloat162?\b",
    r"PFN_cu\w+\b",
)
IDENTIFIER_RE = compile_pattern(r"\b(?:" + "|".join(IDENTIFIER_FAMILIES) + ")")
IDENTIFIER_PREFIXES = (
    *WARP_INTRINSICS,
    "__nv_",
    "__NV_E",
    "cuda",
    "cublas",
    *(f"cu{family}" for family in _DRIVER_FAMILIES),
    "CU",
    "nv_bfloat16",
    "PFN_cu",
)
"""Every word IDENTIFIER_RE matches whole begins with one of these (its families' literal heads)."""
WARP_LITERAL_PREFIXES = ("32", "31", "5", "0x", "0X")
"""Heads of the number words the warp-size rules read (`% 32`, `& 31`, `& 0x1f`, `>> 5`, 0xffffffff)."""
KEYWORD_PREFIXES = ("asm", "__asm", "warpSize", "cg", "cooperative_groups", "cub", "template")
"""Words whose absence lets a detector skip a file (inline asm, `warpSize`, cg::/cub:: algorithms,
function templates)."""
WORD_PREFIXES = IDENTIFIER_PREFIXES + WARP_LITERAL_PREFIXES + KEYWORD_PREFIXES
"""What the C++ detectors look up in SourceText.words: one search per file serves them all."""


_CONSTRUCT_OF: dict[str, Construct | None] = {}
_CONSTRUCT_MEMO_LIMIT = 100_000


def identifier_construct(word: str) -> Construct | None:
    """The construct a word of the file's word search (SourceText.words(WORD_PREFIXES)) is as an
    identifier, or None. Every identifier family ends at a word boundary and holds only word
    characters, so a match is always a whole word: one fullmatch per distinct word instead of a
    regex pass per family over the text. Memoised: the same names recur in every file of a tree
    (a Construct is read only, so one can be shared)."""
    if word in _CONSTRUCT_OF:
        return _CONSTRUCT_OF[word]
    construct = classify_identifier(word) if IDENTIFIER_RE.fullmatch(word) else None
    if len(_CONSTRUCT_OF) < _CONSTRUCT_MEMO_LIMIT:
        _CONSTRUCT_OF[word] = construct
    return construct


_DRIVER_RUNTIME = ("cudaGetDriverEntryPoint",)
LAUNCH_ATTRIBUTE_APIS = (
    "cudaLaunchKernelEx",
    "cudaLaunchConfig",
    "cudaLaunchAttribute",
    "cudaGridDependencySynchronize",
    "cudaTriggerProgrammaticLaunchCompletion",
)


def classify_identifier(name: str) -> Construct | None:
    """The construct a CUDA identifier is, or None for names the scanner does not report."""
    if name in WARP_INTRINSICS:
        return Construct(
            "warp_intrinsic",
            "warp_compat",
            "CUDA warp intrinsic; HIP shuffles default to width 64 and take 64-bit masks",
        )
    if name.startswith("CUB_"):
        return Construct("warp_size", "warp_size_source", "CUB warp-size macro, undeclared under hipCUB")
    if name.startswith(("__nv_", "nv_bfloat", "__NV_")):
        return _type_construct(name)
    if name.startswith(LAUNCH_ATTRIBUTE_APIS):
        return Construct(
            "stream_api",
            "launch_attribute_guard",
            "launch attributes / programmatic dependent launch: hipify has no mapping; guard "
            "it for CUDA and launch with <<<>>> on ROCm",
        )
    if name.startswith("cublas"):
        return Construct("cublas", "hipblas_rename", "cuBLAS API", name.replace("cublas", "hipblas", 1))
    if name.startswith(_DRIVER_RUNTIME) or (
        name.startswith(("cu", "CU", "PFN_cu")) and not name.startswith("cuda")
    ):
        return Construct("stream_api", "driver_api_guard", "CUDA driver API with no 1:1 HIP equivalent")
    if name.startswith("cuda"):
        return Construct(
            "stream_api", "hip_runtime_rename", "CUDA runtime API", "hip" + name.removeprefix("cuda")
        )
    return None


def _type_construct(name: str) -> Construct | None:
    low = name.lower()
    if "bfloat16" in low:
        return Construct(
            "bf16_type",
            "hip_bf16_typedef",
            "CUDA bf16 type; ROCm's is __hip_bfloat16 (not the rocBLAS hip_bfloat16)",
            name.replace("__nv_", "__hip_").replace("nv_bfloat", "__hip_bfloat")
            if name.startswith(("__nv_", "nv_"))
            else None,
        )
    if any(t in low for t in ("fp8", "fp6", "fp4", "__nv_e", "e4m3", "e5m2")):
        hip = name.replace("__nv_", "__hip_")
        return Construct(
            "fp8_type",
            "fp8_fnuz_ocp",
            "CUDA fp8 type; gfx942's fp8 is FNUZ (other bias, range, NaN): keep NVIDIA's OCP bytes in software",
            f"an OCP fp8 shim (rocport's compat header); {hip} only on gfx950 (OCP natively)",
        )
    if "half" in low:
        return Construct("fp16_type", "hip_fp16_typedef", "CUDA-specific half type", "__half")
    return None


# PTX that needs a rewrite to MFMA or an exclusion: judgment, not a rule.
TENSOR_CORE_PTX = (
    "mma",
    "wgmma",
    "ldmatrix",
    "stmatrix",
    "movmatrix",
    "cp.async",
    "cp.reduce.async",
    "mbarrier",
    "tcgen05",
    "wmma",
    "setmaxnreg",
    "griddepcontrol",
    "elect",
    "tensormap",
    "fence.proxy",
)


# PTX instruction names (the part before the first '.'), from the PTX ISA's instruction index. An asm
# statement with none of them is another target's assembly (AMD GCN/CDNA `v_*`/`s_*`, x86 `pause`,
# Arm `yield`): not PTX, not a finding.
_PTX_NAMES = """
abs activemask add addc and applypriority atom bar barrier bfe bfi bfind bmsk bra brev brkpt brx call
clusterlaunchcontrol clz cnot copysign cos cp createpolicy cvt cvta discard div dp2a dp4a elect ex2 exit
fence fma fns getctarank griddepcontrol isspacep istypep ld ldmatrix ldu lg2 lop3 mad mad24 madc mapa
match max mbarrier membar min mma mov movmatrix mul mul24 multimem nanosleep neg not or pmevent popc
prefetch prefetchu prmt rcp red redux rem ret rsqrt sad selp set setmaxnreg setp shf shfl shl shr sin
slct sqrt st stackrestore stacksave stmatrix sub subc suld suq sured sust tanh tcgen05 tensormap testp
tex tld4 trap txq vabsdiff vadd vmad vmax vmin vote vset vshl vshr vsub wgmma wmma xor
"""
PTX_INSTRUCTIONS = frozenset(_PTX_NAMES.split())
PTX_BARE = frozenset({"bra", "brkpt", "call", "exit", "pmevent", "ret", "trap"})
"""The PTX instructions valid with no `.` suffix. Every other one names a type, state space or mode
(`mov.u32`, `or.b32`, `ld.global`): a bare `mov` or `or` is a host ISA's that borrows the name (x86
in Intel syntax `mov %0, edx`, POWER's `or 1,1,1` spin hint), not PTX."""


def is_ptx(opcodes: list[str]) -> bool:
    """True when at least one opcode is a PTX instruction written as PTX requires."""
    for op in opcodes:
        name, dot, _ = op.partition(".")
        if name in PTX_INSTRUCTIONS and (dot or name in PTX_BARE):
            return True
    return False


def ptx_construct(opcode: str) -> Construct:
    if opcode.startswith(TENSOR_CORE_PTX):
        return Construct(
            "inline_ptx",
            "ptx_mfma_or_exclude",
            "tensor-core/async PTX: needs an MFMA rewrite or exclusion (judgment)",
        )
    return Construct("inline_ptx", "ptx_to_c", "inline PTX; rewrite as plain C or a HIP builtin")


# Python packages with no ROCm build: deep_gemm, flashinfer, flash_mla, cutlass (the NVIDIA CUTLASS
# Python DSL), nvidia-* wheels (`nvidia.*`), pynvml, cuda-python (`cuda`), pycuda, cudnn (frontend),
# tensorrt_llm, nvshmem, deep_ep, flash_attn_interface (FlashAttention-3, Hopper only).
# Not listed because they ship ROCm builds or ROCm paths: flash_attn, xformers, triton_kernels,
# sgl_kernel, vllm._C, apex, bitsandbytes.
CUDA_ONLY_MODULES = frozenset(
    {
        "deep_gemm",
        "flashinfer",
        "flash_mla",
        "cutlass",
        "cutlass_library",
        "nvidia",
        "pynvml",
        "cuda",
        "pycuda",
        "cudnn",
        "tensorrt_llm",
        "nvshmem",
        "deep_ep",
        "flash_attn_interface",
    }
)
