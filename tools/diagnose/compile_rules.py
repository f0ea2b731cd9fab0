"""Compiler messages whose kind does not depend on where they fired (a ROCm header or the repo).

Checked before the "raised inside a toolchain header, so the environment" rule: an LDS overflow
is the kernel's, a composable_kernel/rocWMMA static_assert says the target arch is not supported,
a header that demands C++17 says the build's flags are wrong, an unknown compiler option says the
compiler is not the one the build expects. Each returns (kind, symbol) or None.
"""

from __future__ import annotations

import re

from tools.diagnose.compile_record import CompilerDiagnostic

_TILE_WIDER_THAN_WAVE = re.compile(
    r"[Tt]ile size is either not a power of 2 or greater than the wavefront size"
)
_TILE = re.compile(r"(?:tiled_partition|thread_block_tile)\s*<\s*(?P<n>\d+)")
_ARRAY_EXTENT = re.compile(
    r"array index \d+ is past the end|array (?:size|is) (?:is )?(?:negative|too large)"
    r"|zero size arrays|excess elements in array initializer"
)
_WARP_CONSTANT = re.compile(r"\b(?:\w*WARP\w*|k?[Ww]arp_?[Ss]ize|kWarpThreads)\b")
_THIRTY_TWO_LANES = re.compile(r"/ ?32\b|>> ?5\b")
_LOCAL_MEMORY = re.compile(
    r"local memory (?:limit exceeded \(\d+\)|\(\d+\) exceeds limit \(\d+\)) in (?:function )?"
    r"'?(?P<s>[\w.$]+)'?"
)
_STATIC_ASSERT = re.compile(r"static assertion failed")
_ARCH_GATED_HEADER = re.compile(r"composable_kernel|/ck_tile/|/ck/|rocwmma")
_UNSUPPORTED_ARCH = re.compile(
    r"[Uu]nsupported (?:architecture|arch|target)|not supported on (?:this|current) arch"
)
_LANGUAGE_STANDARD = re.compile(r"requires (?:at least )?C\+\+ ?\d+|C\+\+\d+ or (?:later|newer) is required")
_UNKNOWN_OPTION = re.compile(
    r"(?:unknown|unsupported) (?:warning )?(?:option|argument)[: ]+'?(?P<s>-[\w=+,.-]+)'?"
)
_HIP_VERSION_MACRO = re.compile(r"undeclared identifier '(?P<s>HIP_VERSION\w*|__HIP_PLATFORM\w*)'")
_CUDA_PATH_NOT_FOUND = re.compile(
    r"(?P<s>CMAKE_CUDA_COMPILER)|Failed to find (?P<n>nvcc)|(?P<m>nvcc) (?:was )?not found"
    r"|(?P<t>CUDA_TOOLKIT_ROOT_DIR)|(?P<h>CUDA_HOME)"
)


def location_free_kind(diag: CompilerDiagnostic) -> tuple[str, str | None] | None:
    """(kind, symbol) for messages that mean the same wherever they fired."""
    msg = diag.message
    if _TILE_WIDER_THAN_WAVE.search(msg):  # cooperative_groups::tiled_partition<64> on a wave32 target
        tile = _TILE.search(" ".join([diag.source_line, *diag.notes]))
        return "warp_size", f"tiled_partition<{tile.group('n')}>" if tile else None
    if _ARRAY_EXTENT.search(msg):  # per-warp arrays sized from a 32-lane constant
        constant = _WARP_CONSTANT.search(diag.source_line)
        if constant or _THIRTY_TWO_LANES.search(diag.source_line):
            return "warp_size", constant.group(0) if constant else None
    m = _LOCAL_MEMORY.search(msg)
    if m:
        return "launch_bounds_smem", m.group("s")
    if _STATIC_ASSERT.search(msg) and (
        _UNSUPPORTED_ARCH.search(msg) or _ARCH_GATED_HEADER.search(diag.file or "")
    ):
        return "arch_unsupported", diag.target
    if _LANGUAGE_STANDARD.search(msg):
        return "build_config", None
    m = _UNKNOWN_OPTION.search(msg)
    if m:
        return "toolchain", m.group("s")
    m = _HIP_VERSION_MACRO.search(msg)
    if m:  # set by hip_version.h: an incomplete HIP install, not the code
        return "toolchain", m.group("s")
    return None


def cuda_path_on_rocm(message: str) -> str | None:
    """The CUDA piece a ROCm build went looking for (the build took its CUDA branch), or None."""
    m = _CUDA_PATH_NOT_FOUND.search(message)
    return next((g for g in m.groups() if g), None) if m else None
