"""Map a compiler diagnostic to a FAILURE_CLASSES.md kind and the symbol a fixer needs.

Order matters: the most specific family wins (a missing `cub/cub.cuh` is `cub`, not
`cuda_header`); an error raised inside a toolchain header is `toolchain` unless it is one of
the code families; what matches nothing is `compile_error` / `link_error`.
"""

from __future__ import annotations

import re
from pathlib import Path

from tools.diagnose.classify_patterns import (
    ASM_MNEMONIC,
    BARE_MNEMONIC,
    BF16,
    CONSTEXPR_INIT,
    CUBLAS,
    CUDA_HEADERS,
    CUDA_RUNTIME_CALL,
    DIALECT,
    FP8,
    FP16,
    HIP_BUILTIN_DUP,
    HIP_HEADERS,
    MISSING_HEADER,
    NCCL,
    NO_KNOWN_CONVERSION,
    NO_VIABLE,
    PTX,
    SMEM,
    STREAM,
    STREAM_HEADERS,
    UNDECLARED,
    VENDOR_TYPE,
    WARP_INTRINSICS,
    WARP_SIZE,
)
from tools.diagnose.compile_record import CompilerDiagnostic
from tools.diagnose.compile_rules import cuda_path_on_rocm, location_free_kind
from tools.diagnose.signature import is_system_path


def missing_header(message: str) -> str | None:
    """The header a 'file not found' error names, as written in the #include."""
    for pattern in MISSING_HEADER:
        m = pattern.match(message)
        if m:
            return m.group("h")
    return None


def _header_kind(header: str, tool: str) -> str:
    if header.startswith(("cub/", "thrust/system/cuda")):
        return "cub"
    if header.startswith("cuda/"):
        return "cuda_std"
    if STREAM_HEADERS.search(header):
        return "stream_api"
    if CUDA_HEADERS.match(header):
        return "cuda_header"
    if HIP_HEADERS.match(header):
        # a missing HIP header under hipcc means the ROCm install is too old or incomplete;
        # under nvcc it means a guard let ROCm-only code into the CUDA build
        return "compile_error" if tool == "nvcc" else "toolchain"
    return "compile_error"


def _undeclared(message: str) -> tuple[str | None, str | None]:
    for pattern in UNDECLARED:
        m = pattern.match(message)
        if m:
            return m.group("s"), m.groupdict().get("ns")
    return None, None


def _type_kind(symbol: str) -> str | None:
    bare = symbol.split("<")[0].split("::")[-1]
    if FP8.search(bare):
        return "fp8_type"
    if BF16.search(bare):
        return "bf16_type"
    if FP16.search(bare):
        return "fp16_type"
    return None


def _symbol_kind(symbol: str, namespace: str | None, diag: CompilerDiagnostic) -> tuple[str, str] | None:
    bare = symbol.split("(")[0].strip()
    ns = (namespace or "").lstrip(":")
    if ns in ("cub", "hipcub") or bare in ("cub", "hipcub"):
        return "cub", f"{ns}::{bare}" if ns else bare
    if ns.startswith("cuda") or bare == "cuda":
        return "cuda_std", f"{ns}::{bare}" if ns else bare
    if WARP_INTRINSICS.match(bare):
        return "warp_intrinsic", bare
    if WARP_SIZE.match(bare):
        return "warp_size", bare
    type_kind = _type_kind(bare)
    if type_kind:
        return type_kind, bare
    if STREAM.search(bare):
        return "stream_api", bare
    if CUDA_RUNTIME_CALL.match(bare):  # a runtime/graph call or enum hipify left untranslated
        return "cuda_api", bare
    if CUBLAS.search(bare):
        return "cublas", bare
    if SMEM.search(bare):
        return "launch_bounds_smem", bare
    return None


def _bare_type(name: str) -> str:
    return re.sub(r"\b(?:const|volatile|struct)\b|[*&\s]", "", name)


def _conversion_type(diag: CompilerDiagnostic) -> tuple[str, str] | None:
    """`no viable conversion from '__half' to ...`: the CUDA/HIP half or bfloat16 type involved."""
    m = NO_VIABLE.search(diag.message)
    if not m:
        return None
    for side in ("f", "t"):
        canonical = _bare_type(m.group(side + "a") or m.group(side))
        if VENDOR_TYPE.match(canonical) or VENDOR_TYPE.match(_bare_type(m.group(side))):
            kind = _type_kind(canonical)
            if kind:
                return kind, canonical
    return None


def _half_candidates(diag: CompilerDiagnostic, symbol: str | None) -> tuple[str, str] | None:
    """`atomicAdd(half2*, ...)`: no overload takes the half/bfloat16 type (the candidates' notes say so)."""
    for note in diag.notes:
        m = NO_KNOWN_CONVERSION.search(note)
        kind = _type_kind(_bare_type(m.group("a") or m.group("t"))) if m and symbol else None
        if kind and symbol:
            return kind, symbol
    return None


def _from_notes(diag: CompilerDiagnostic) -> tuple[str, str] | None:
    """Macros hide the CUDA name: `no matching function for call to '__shfl_xor'` expanded from '__shfl_xor_sync'."""
    for note in diag.notes:
        m = re.search(r"expanded from macro '([^']+)'", note)
        if m and WARP_INTRINSICS.match(m.group(1)):
            return "warp_intrinsic", m.group(1)
        m = re.search(r"non-constexpr variable '([^']+)'", note)
        if m and WARP_SIZE.match(m.group(1)):
            return "warp_size", m.group(1)
    return None


def classify_compile(diag: CompilerDiagnostic, repo_root: str | Path | None = None) -> tuple[str, str | None]:
    """(kind, symbol) for one compiler/linker diagnostic."""
    msg = diag.message
    if diag.tool == "cmake":
        return _classify_cmake(msg)
    early = location_free_kind(diag)
    if early:
        return early
    if diag.tool in ("ld", "driver") or diag.link_symbol:
        return _classify_link_or_driver(diag)
    header = missing_header(msg)
    if (
        header
        and diag.tool in ("clang", "hipcc")
        and _header_kind(header, diag.tool) in ("cuda_header", "cub", "cuda_std")
    ):
        return _header_kind(
            header, diag.tool
        ), header  # hip-clang never has a CUDA header, wherever it was included
    if is_system_path(diag.file, repo_root):
        # raised inside ROCm/CUDA/system headers: the environment, not the repo's code
        return "toolchain", _toolchain_symbol(msg, header)
    if header:
        return _header_kind(header, diag.tool), header
    symbol, namespace = _undeclared(msg)
    noted = _from_notes(diag)
    if noted:
        return noted
    if symbol:
        found = _symbol_kind(symbol, namespace, diag)
        if found:
            return found
    found = _half_candidates(diag, symbol) or _conversion_type(diag) or _quoted_type(msg)
    if found:
        return found
    m = CONSTEXPR_INIT.search(msg)
    if m and ("warp" in diag.source_line.lower() or "WARP" in diag.source_line):
        return "warp_size", m.group("s")
    if PTX.search(msg) or (diag.file or "").startswith("<inline asm"):
        asm = ASM_MNEMONIC.search(diag.source_line) or BARE_MNEMONIC.match(diag.source_line)
        return "inline_ptx", asm.group(1) if asm else None
    if CUBLAS.search(msg):
        return "cublas", _first_quoted(msg)
    if SMEM.search(msg):
        return "launch_bounds_smem", _first_quoted(msg)
    if STREAM.search(msg):
        return "stream_api", _first_quoted(msg)
    if DIALECT.search(msg):
        quoted = re.findall(r"'([^']+)'", msg)
        return "compiler_dialect", quoted[-1] if quoted else None
    return "compile_error", symbol or _first_quoted(msg)


def _toolchain_symbol(message: str, header: str | None) -> str | None:
    """What a toolchain-header error is about; an `#error "text"` directive names nothing."""
    if header:
        return header
    if message.startswith('"'):
        return None
    return _undeclared(message)[0] or _first_quoted(message)


def _quoted_type(message: str) -> tuple[str, str] | None:
    """The first quoted name that is a half/bfloat16/fp8 type (`incomplete result type 'hip_fp8_e4m3'`)."""
    for name in re.findall(r"'([A-Za-z_][\w:]*)'", message):
        kind = _type_kind(name)
        if kind:
            return kind, name
    return None


def _classify_link_or_driver(diag: CompilerDiagnostic) -> tuple[str, str | None]:
    msg, sym = diag.message, diag.link_symbol
    if sym and NCCL.match(sym):  # an NCCL API the RCCL in use lacks, or librccl not linked
        return "nccl_symbol", sym
    if "multiple definition" in msg or "duplicate symbol" in msg:
        if sym and HIP_BUILTIN_DUP.search(sym):
            return "toolchain", sym
        return "link_error", sym
    if sym:
        return "link_error", sym
    arch = re.search(
        r"(?:unsupported|invalid)(?: CUDA)? (?:gpu|GPU|offload)? ?arch(?:itecture)?[^'\"\w]*['\"]?([\w:+-]+)",
        msg,
        re.IGNORECASE,
    )
    if arch:
        return "arch_unsupported", arch.group(1)
    if re.search(
        r"cannot find (?:ROCm|HIP|CUDA|libdevice)|device library|No available targets|rocm-path",
        msg,
        re.IGNORECASE,
    ):
        return "toolchain", None
    return "compile_error", _first_quoted(msg)


def _classify_cmake(message: str) -> tuple[str, str | None]:
    """A configure failure: a missing ROCm/CUDA package is the environment; anything else the build."""
    missing_cuda = cuda_path_on_rocm(message)
    if missing_cuda:  # the ROCm build took the project's CUDA branch
        return "build_config", missing_cuda
    package = re.search(r'provided by\s+"([^"]+)"|find_package\w*\(\s*(\w+)|Could NOT find (\w+)', message)
    name = next((g for g in package.groups() if g), None) if package else None
    if re.search(r"\b(?:hip|HIP|rocm|ROCm|ROCM|roc\w+|hip\w+|amdgpu|CUDA|cuda|CUDAToolkit)\b", message):
        return "toolchain", name
    return "compile_error", name


def _first_quoted(message: str) -> str | None:
    m = re.search(r"'([^']+)'|\"([^\"]+)\"|`([^`']+)'", message)
    if not m:
        return None
    return next(g for g in m.groups() if g)
