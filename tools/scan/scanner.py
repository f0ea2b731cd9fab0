"""Scan one file: read it once, pre-filter with one bytes regex, then run the C++ or Python rules."""

from __future__ import annotations

import os

from tools.cpp.build_configs import Macro, cuda_config, rocm_config
from tools.cpp.lines import rocm_only_file
from tools.cpp.preprocessor import Seed, walk
from tools.cpp.source import SourceText
from tools.files import NotRegularFile, read_regular
from tools.records import Failure
from tools.regex_memo import compile_pattern
from tools.scan.catalog import WORD_PREFIXES
from tools.scan.instantiation import skip_spans, uninstantiated_bodies
from tools.scan.patterns import cpp_findings
from tools.scan.python_reach import imported_names, may_have_findings

CPP_SUFFIXES = (
    ".hip",
    ".cu",
    ".cuh",
    ".h",
    ".hpp",
    ".hh",
    ".hxx",
    ".cc",
    ".cpp",
    ".cxx",
    ".c",
    ".inl",
    ".ipp",
    ".tcc",
)
PY_SUFFIXES = (".py",)
_KERNEL_SUFFIXES = (".cu", ".cuh", ".hip")
_DIRECTIVES = compile_pattern(rb"#[ \t]*(?:define|include)\b")
"""Headers without a CUDA construct still matter to the tree: their includes and macros."""
MAX_BYTES = 8 * 1024 * 1024
"""Larger files are generated code or data, not hand-written kernels: skipped with a note."""

# Every C++ rule needs one of these tokens; a file with none is done after one regex search.
CPP_CANDIDATES = compile_pattern(
    rb"#[ \t]*include[ \t]*[<\"](?:cuda|cub/|cooperative_groups|crt/|nvtx3|mma\.h|math_constants|vector_types"
    rb"|curand|cublas|cusparse|cufft|cudnn|nvrtc|nccl|nvToolsExt|nvml|cusolver|device_launch|cuComplex)"
    rb"|__shfl|_sync\b|__syncwarp|__activemask|__nv_|nv_bfloat|__NV_E|CUB_|\bcuda[A-Z]|\bcu[A-Z]|\bCU[a-z]"
    rb"|PFN_cu|\basm\b|__asm|warpSize|[Ww]arp|WARP|[Ll]ane|LANE|threadIdx|\btid|0[xX][fF]{8}|__shared__"
)


class FileResult:
    """What one file contributes to a repo scan. The scan's records are plain classes: a `rocport
    scan` process builds every record class it imports at start-up, ~0.35 ms per dataclass, and
    issue 15 holds the whole process to 3x grep (tools/__init__.py)."""

    FIELDS = (
        "path",
        "findings",
        "provides",
        "includes",
        "cuda_includes",
        "note",
        "exports",
        "condition_names",
        "rocm_only",
        "imports",
    )
    __slots__ = FIELDS

    def __init__(
        self,
        path: str,
        findings: list[Failure] | None = None,
        provides: set[str] | None = None,
        includes: list[str] | None = None,
        cuda_includes: list[str] | None = None,
        note: str | None = None,
        exports: dict[str, tuple[Macro, Macro]] | None = None,
        condition_names: set[str] | None = None,
        rocm_only: bool = False,
        imports: list[str] | None = None,
    ) -> None:
        self.path = path
        self.findings: list[Failure] = [] if findings is None else findings
        self.provides: set[str] = set() if provides is None else provides
        """CUDA-named identifiers the file defines for the ROCm build (compat aliases, helpers)."""
        self.includes: list[str] = [] if includes is None else includes
        """Headers it includes in code the ROCm build compiles."""
        self.cuda_includes: list[str] = [] if cuda_includes is None else cuda_includes
        """Headers it includes only where the ROCm build does not compile (`#ifndef USE_ROCM`)."""
        self.note = note
        """Why it was skipped or only partly scanned (binary, too large, unreadable, not Python)."""
        self.exports: dict[str, tuple[Macro, Macro]] = {} if exports is None else exports
        """Macros the file leaves defined, (ROCm, CUDA) per name: what files including it see."""
        self.condition_names: set[str] = set() if condition_names is None else condition_names
        """Identifiers its #if conditions read: a rescan with header macros matters only if one is seeded."""
        self.rocm_only = rocm_only
        """Only the ROCm build compiles it (.hip, rocm/ directory, unguarded hip/*.h include)."""
        self.imports: list[str] = [] if imports is None else imports
        """Python: the dotted names its import statements name (see python_reach)."""

    def __repr__(self) -> str:
        return f"FileResult({self.path!r}, {len(self.findings)} finding(s))"


def is_scannable(rel: str) -> bool:
    return rel.endswith(CPP_SUFFIXES) or rel.endswith(PY_SUFFIXES)


def read_source(path: str | os.PathLike[str]) -> tuple[bytes | None, str | None]:
    """The file's bytes, or None and the reason it is skipped."""
    try:
        data = read_regular(path, MAX_BYTES + 1)
    except NotRegularFile:
        return None, "not a regular file (FIFO, socket or device)"
    except OSError as exc:
        return None, f"unreadable: {exc.strerror or exc}"
    if len(data) > MAX_BYTES:
        return None, f"larger than {MAX_BYTES // (1024 * 1024)} MiB"
    if data.find(b"\0", 0, 8192) >= 0:
        return None, "binary file"
    return data, None


def scan_source(rel: str, data: bytes, *, hipify: bool = False, seed: Seed | None = None) -> FileResult:
    """Findings of one file's bytes; `rel` (repo-relative) decides C++ or Python and names it;
    `seed`: macros from the headers it includes (see tools.cpp.tree)."""
    result = FileResult(rel)
    is_python = rel.endswith(PY_SUFFIXES)
    if is_python:
        result.imports = imported_names(rel, data)
        if not may_have_findings(data, result.imports):
            return result
    # Kernel files nearly always hold a candidate, so the extra pass would only cost time there.
    if (
        not is_python
        and not rel.endswith(_KERNEL_SUFFIXES)
        and not _DIRECTIVES.search(data)
        and not CPP_CANDIDATES.search(data)
    ):
        return result
    src = SourceText(rel, data.decode("utf-8", "surrogateescape"), () if is_python else WORD_PREFIXES)
    if is_python:
        # Loaded here, not at start-up: `ast` and the rules cost ~2.5 ms of every scan process, and a
        # C++ tree (or a forked copy that meets no Python candidate) never needs them.
        from tools.scan.python_rules import python_findings

        result.findings, result.note = python_findings(src)
        return result
    regions = walk(src.masked, src.raw, rocm_config(hipify), cuda_config(), seed)
    result.exports, result.condition_names = regions.exports, regions.condition_names
    result.rocm_only = rocm_only_file(rel, regions)
    if result.rocm_only:
        result.includes = [inc.header for inc in regions.includes if inc.rocm is not False]
        return result
    # Detectors see template bodies the ROCm build never instantiates as skipped; includes and
    # exported macros are the preprocessor's (a #define holds whether or not the body is compiled).
    compiled = skip_spans(regions, uninstantiated_bodies(src, regions))
    result.findings, result.provides = cpp_findings(src, compiled)
    result.includes = [inc.header for inc in regions.includes if inc.rocm is not False]
    result.cuda_includes = [inc.header for inc in regions.includes if inc.rocm is False]
    return result


def scan_path(
    root: str | os.PathLike[str], rel: str, *, hipify: bool = False, seed: Seed | None = None
) -> FileResult:
    """Read and scan `root/rel` (read exactly once)."""
    data, note = read_source(os.path.join(root, rel))
    if data is None:
        return FileResult(rel, note=note)
    return scan_source(rel, data, hipify=hipify, seed=seed)
