"""The two builds a source file is read under: which macros a ROCm (hipcc) build and a CUDA (nvcc)
build define, and which headers each toolchain provides.

Macros a configuration does not name are unknown, not undefined: tools/cpp/conditions.py evaluates
`#if` expressions against these with 'unknown' as a third value.
"""

from __future__ import annotations

from collections import namedtuple
from functools import lru_cache

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (tools/__init__.py)
if TYPE_CHECKING:
    from typing import NamedTuple

    class _MacroFields(NamedTuple):
        defined: bool | None
        """True, False, or None when it depends on things the scanner cannot see."""
        value: int | None = None
        """Its integer value when defined to one; None when unknown or not an integer."""

else:
    _MacroFields = namedtuple("Macro", ("defined", "value"), defaults=(None,))  # noqa: PYI024


class Macro(_MacroFields):
    """What a configuration knows about one macro (a named tuple: immutable, and hashed in C, which
    the `#if` memo does for every macro an expression names)."""

    __slots__ = ()


class BuildConfig:
    """The macros one build defines; anything not listed is unknown. (A plain class: `rocport scan`
    builds each record class it imports at start-up, and a dataclass costs ~0.35 ms to build.)"""

    __slots__ = ("header_exists", "macros", "name")

    def __init__(
        self, name: str, macros: dict[str, Macro] | None = None, header_exists: dict[str, bool] | None = None
    ) -> None:
        self.name = name
        self.macros: dict[str, Macro] = {} if macros is None else macros
        self.header_exists: dict[str, bool] = {} if header_exists is None else header_exists
        """Prefix of a header path -> whether `__has_include` finds it in this build."""

    def __repr__(self) -> str:
        return f"BuildConfig({self.name!r}, {len(self.macros)} macro(s))"

    def copy(self) -> BuildConfig:
        return BuildConfig(self.name, dict(self.macros), self.header_exists)

    def lookup(self, name: str) -> Macro:
        return self.macros.get(name, _UNKNOWN)


_DEF, _UNDEF = Macro(True, 1), Macro(False)
_UNKNOWN = Macro(None)
"""What lookup returns for a macro the configuration does not name (shared: Macro is frozen)."""
ROCM_MACROS = ("USE_ROCM", "__HIP_PLATFORM_AMD__", "__HIP_PLATFORM_HCC__", "__HIPCC__", "__HIP__")
"""Defined by a ROCm build (hip-clang, or the build's -DUSE_ROCM); never by nvcc."""
CUDA_COMPILER_MACROS = (
    "__CUDACC__",
    "__NVCC__",
    "__CUDA_ARCH__",
    "__CUDA_ARCH_LIST__",
    "CUDA_VERSION",
    "CUDART_VERSION",
    "__CUDACC_VER_MAJOR__",
    "__CUDACC_VER_MINOR__",
)
"""Defined by nvcc or the CUDA toolkit headers; never by hip-clang (unless hipify rewrites them)."""
OTHER_VENDOR_MACROS = (
    "USE_MUSA",
    "__MUSACC__",
    "__MUSA__",
    "USE_MACA",
    "__MACACC__",
    "__MACA__",
    "USE_NPU",
    "USE_ASCEND",
    "__CCE__",
    "USE_XPU",
    "__SYCL_DEVICE_ONLY__",
    "SYCL_LANGUAGE_VERSION",
    "__ILUVATAR__",
    "__COREX__",
    "USE_CAMBRICON",
    "__BANG__",
    "USE_HPU",
    "USE_DCU",
    "USE_IXDNN",
)
"""Other accelerators' compilers and build flags (MUSA, MetaX, Ascend, XPU, Iluvatar, ...): undefined
in both the ROCm and the CUDA build, so their branches are neither builds' code."""
_CUDA_HEADERS = {
    "cuda": True,
    "cub/": True,
    "cuda_": True,
    "cudaTypedefs": True,
    "cublas": True,
    "hip/": False,
    "hipcub/": False,
    "rocprim/": False,
    "rocwmma/": False,
    "hipblas": False,
}


@lru_cache(maxsize=2)
def rocm_config(hipify: bool = False) -> BuildConfig:
    """hip-clang on AMD (checked with `hipcc -dM -E`): HIP macros defined, CUDA compiler macros not.

    Under build-time hipify, `__CUDACC__` is rewritten to `__HIPCC__`, so it reads as defined.
    Cached: callers copy it before defining macros (the preprocessor walk does).
    """
    defined = [
        "USE_ROCM",
        "__HIP_PLATFORM_AMD__",
        "__HIP_PLATFORM_HCC__",
        "__HIPCC__",
        "__HIP__",
        "__clang__",
    ]
    undefined = [
        "__HIP_PLATFORM_NVIDIA__",
        "__HIP_PLATFORM_NVCC__",
        "__NVCC__",
        "__CUDA_ARCH__",
        "__CUDA_ARCH_LIST__",
        "__CUDACC_VER_MAJOR__",
        "__CUDACC_VER_MINOR__",
        "CUDA_VERSION",
        "CUDART_VERSION",
        "__CUDA__",
        "USE_CUDA",
    ]
    macros = dict.fromkeys(defined, _DEF) | dict.fromkeys((*undefined, *OTHER_VENDOR_MACROS), _UNDEF)
    macros["__CUDACC__"] = _DEF if hipify else _UNDEF
    for name in ("HIP_VERSION", "HIP_VERSION_MAJOR", "HIP_VERSION_MINOR", "ROCM_VERSION"):
        macros[name] = Macro(True, None)
    prefixes = {k: not v for k, v in _CUDA_HEADERS.items()}
    return BuildConfig("rocm", macros, prefixes)


@lru_cache(maxsize=1)
def cuda_config() -> BuildConfig:
    """nvcc: CUDA compiler macros defined, every HIP/ROCm macro undefined; __CUDA_ARCH__ per pass."""
    defined = ["__CUDACC__", "__NVCC__"]
    undefined = [
        "USE_ROCM",
        "__HIP_PLATFORM_AMD__",
        "__HIP_PLATFORM_HCC__",
        "__HIPCC__",
        "__HIP__",
        "__HIP_DEVICE_COMPILE__",
        "HIP_VERSION",
        "ROCM_VERSION",
        "__HIP_PLATFORM_NVIDIA__",
    ]
    macros = dict.fromkeys(defined, _DEF) | dict.fromkeys((*undefined, *OTHER_VENDOR_MACROS), _UNDEF)
    return BuildConfig("cuda", macros, dict(_CUDA_HEADERS))
