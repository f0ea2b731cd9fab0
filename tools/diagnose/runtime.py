"""One-line run-time failures: HIP runtime/HSA, Triton resources, OOM, server flags, tokenizer, arch.

Each rule is (kind, pattern, symbol group). The same table classifies a bare log line and the
"Type: message" of a Python exception, so `RuntimeError: HIP error: invalid device function`
in a traceback and the same text logged alone diagnose alike.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class RuntimeRule:
    kind: str
    pattern: re.Pattern[str]
    symbol_group: str | None = "s"
    symbol: str | None = None
    """The symbol when the rule names it (the text's own spelling varies)."""


def _r(kind: str, pattern: str, flags: int = 0, symbol: str | None = None) -> RuntimeRule:
    compiled = re.compile(pattern, flags)
    return RuntimeRule(kind, compiled, "s" if "?P<s>" in pattern else None, symbol)


RULES: tuple[RuntimeRule, ...] = (
    # fp8 layout problems show up as unsupported mixes of e4m3fn/e4m3fnuz, or as UE8M0 scales being doubled
    _r("fp8_layout", r"not implemented for '(?P<s>Float8_e8m0fnu)'"),
    _r(
        "fp8_layout",
        r"(?P<s>HIPBLAS_STATUS_NOT_SUPPORTED|hipblasLt\w* .*not supported).*(?:e4m3|fp8|float8)",
        re.IGNORECASE,
    ),
    _r("cublas", r"(?P<s>HIPBLAS_STATUS_NOT_SUPPORTED|CUBLAS_STATUS_NOT_SUPPORTED)"),
    # vLLM's capability gate (bf16 needs compute capability 8.0), which misreads some ROCm GPUs
    _r(
        "unsupported_dtype",
        r"(?i)bfloat16 is only supported on GPUs with compute capability",
        symbol="bfloat16",
    ),
    # a ROCm build that took the project's CUDA branch: setup.py / cpp_extension looking for CUDA_HOME
    _r("build_config", r"(?P<s>CUDA_HOME) (?:environment variable is not set|does not exist|is not set)"),
    # an NCCL API the RCCL in use does not have (at link or when librccl loads)
    _r("nccl_symbol", r"undefined (?:symbol|reference to)[: ]+[`'\"]?(?P<s>[nr]ccl[A-Z_]\w*)"),
    _r("unsupported_dtype", r"not implemented for '(?P<s>[\w.]+)'"),
    _r(
        "unsupported_dtype",
        r"(?:Unsupported|unsupported|not supported) (?:dtype|data type)[: ]+'?(?P<s>torch\.\w+|\w+)",
    ),
    _r("python_version_parse", r"InvalidVersion: (?:Invalid version: )?'(?P<s>[^']+)'"),
    _r("launch_bounds_smem", r"OutOfResources: out of resource: (?P<s>shared memory)"),
    _r("warp_size", r"Launch params \((?P<s>[\d, ]+)\) are larger than launch bounds"),
    _r("triton_config", r"Triton Error \[HIP\]:\s+Code: \d+, Mess+age: invalid argument"),
    _r(
        "triton_config",
        r"(?P<s>num_warps)\s*(?:=\s*\d+\s*)?(?:exceeds|is too large|must be|> ?\d+)",
        re.IGNORECASE,
    ),
    _r("triton_config", r"block dimensions: (?P<s>\d+x\d+x\d+): HIP_ERROR_InvalidValue"),
    _r("resource", r"(?P<s>(?:HIP|CUDA|GPU) out of memory)"),
    _r(
        "resource",
        r"(?P<s>(?:HIP|CUDA|GPU)? ?out of memory|OutOfMemoryError|hipErrorOutOfMemory|No space left on device"
        r"|Not enough memory|No available memory for the cache blocks|insufficient memory)",
        re.IGNORECASE,
    ),
    _r(
        "hip_runtime",
        r"(?P<s>hipErrorNoBinaryForGpu|hipErrorInvalidDeviceFunction|hipErrorSharedObject\w*|hipError\w+)",
    ),
    _r("hip_runtime", r"(?P<s>HSA_STATUS_ERROR_\w+)"),
    _r("hip_runtime", r"(?P<s>no kernel image is available)"),
    _r("hip_runtime", r"(?:HIP|CUDA) error: (?P<s>[\w ]+?)(?:\n|$|\s{2}|\.|:)"),
    _r("hip_runtime", r"(?P<s>Memory access fault) by GPU"),
    _r("hip_runtime", r"undefined symbol: (?P<s>[\w.$@:<>~]+)"),
    # rocBLAS/hipBLASLt kernels not built for this GPU arch (or not installed)
    _r("hip_runtime", r"(?:Cannot read|Could not load) .*?(?P<s>TensileLibrary[\w.-]*\.dat)"),
    _r("hip_runtime", r"MIOpen(?:\(HIP\))?:? Error"),
    # a CUDA library missing on a ROCm machine: a CUDA build of the package was installed
    _r(
        "cuda_only_dep",
        r"(?P<s>lib(?:cuda|cudart|cublas\w*|cudnn\w*|nccl|nvrtc\w*|nvToolsExt\w*|cufft\w*|curand\w*"
        r"|cusparse\w*|cusolver\w*|nvJitLink\w*)\.so[\d.]*): cannot open shared object file",
    ),
    # a ROCm (or its dependency's) shared library missing at load time
    _r("hip_runtime", r"(?P<s>lib[\w+-]+\.so[\d.]*): cannot open shared object file"),
    _r("serve_flag", r"error: unrecognized arguments: (?P<s>\S+)"),
    _r("serve_flag", r"error: argument (?P<s>--?[\w-]+)(?:/--?[\w-]+)*: (?:invalid choice|expected|invalid)"),
    _r("serve_flag", r"error: (?:ambiguous option: |no such option: )(?P<s>--?[\w-]+)"),
    _r(
        "serve_flag",
        r"(?:unexpected keyword argument|Unknown argument|unrecognized option)[: ]+'?(?P<s>--?[\w-]+)",
    ),
    _r("tokenizer", r"Can't load tokenizer for '(?P<s>[^']+)'"),
    # tokenizers too old for the tokenizer.json: `data did not match any variant of untagged enum ModelWrapper`
    _r("tokenizer", r"did not match any variant of untagged enum (?P<s>\w+)"),
    _r("tokenizer", r"Tokenizer class (?P<s>\w+) does not exist"),
    _r(
        "tokenizer",
        r"(?:tokenizer(?:\.json|\.model|_config\.json)?) (?:not found|does not exist|is missing)"
        r"|(?P<s>tokenizer\w*\.(?:json|model)) not found",
        re.IGNORECASE,
    ),
    _r("arch_unsupported", r"Model architectures? \[?'?(?P<s>[\w.]+)'?\]? (?:are|is) not supported"),
    _r("arch_unsupported", r"[Uu]nsupported (?:model )?architectures?: \[?'?(?P<s>[\w.]+)"),
    _r(
        "arch_unsupported",
        r"has model type `(?P<s>[\w-]+)` but Transformers does not recognize this architecture",
    ),
    _r(
        "arch_unsupported",
        r"(?:unsupported|invalid) (?:CUDA |HIP )?(?:gpu |GPU )?(?:offload )?"
        r"arch(?:itecture)?[: ]+'?(?P<s>gfx\w+|sm_\w+|compute_\w+)",
    ),
    _r("arch_unsupported", r"Unsupported gpu architecture '(?P<s>[\w]+)'"),
)


# Every rule needs one of these words; one check spares the table for ordinary log lines. Plain substring
# tests: as one regex alternation (no common first character) they cost ~3x as much per line.
_HINTS = (
    "implemented", "HIPBLAS", "hipblas", "CUBLAS", "untagged enum", "CUDA_HOME", "Tensile", "shared object",
    "MIOpen", "ccl", "Version", "version", "OutOfResources", "Launch params", "Triton", "num_warps", "block dim",
    "memory", "Memory", "space left", "hipError", "HSA_STATUS", "kernel image", "HIP error", "CUDA error",
    "undefined symbol", "error: ", "argument", "Tokenizer", "tokenizer", "architecture", "supported", "invalid",
    "Unknown", "unknown", "unrecognized", "model type",
)  # fmt: skip


def _hinted(text: str) -> bool:
    # a loop, not any(): no generator to resume per word (~2x faster on the lines that hold none)
    for word in _HINTS:  # noqa: SIM110
        if word in text:
            return True
    return False


def match_runtime(text: str) -> tuple[str, str | None] | None:
    """(kind, symbol) when `text` is a known run-time failure, else None."""
    if not _hinted(text):
        return None
    for rule in RULES:
        m = rule.pattern.search(text)
        if m:
            symbol = m.group(rule.symbol_group) if rule.symbol_group else rule.symbol
            return rule.kind, symbol.strip() if symbol else None
    return None


# A line that reads like a failure even though no rule knows it: reported as `unknown`.
LOOKS_LIKE_ERROR = re.compile(
    r"(?:^|\s)(?:(?:fatal )?error\b[:!]|ERROR\b|FATAL\b|Segmentation fault|core dumped|Aborted \(core|"
    r"[\w.]+(?:Error|Exception): |terminate called after throwing|Assertion .* failed|panic:)"
)
# Log chatter that mentions errors without being one.
NOT_AN_ERROR = re.compile(
    r"(?:0 errors?|no errors?|error_rate|errors=0|ignore_errors|-Werror|werror|if error|on_error)",
    re.IGNORECASE,
)


_ERROR_WORDS = (
    "error", "ERROR", "FATAL", "Segmentation fault", "core dumped", "Aborted (core", "Error: ", "Exception: ",
    "terminate called after throwing", "Assertion ", "panic:",
)  # fmt: skip
"""A word each LOOKS_LIKE_ERROR alternative holds: a line with none of them is not searched."""


def _reads_like_error(line: str) -> bool:
    for word in _ERROR_WORDS:
        if word in line:
            return LOOKS_LIKE_ERROR.search(line) is not None
    return False


def looks_like_error(line: str) -> bool:
    """True for lines a user would read as a failure."""
    return _reads_like_error(line) and not NOT_AN_ERROR.search(line)


def worth_a_look(line: str) -> bool:
    """Whether a line no parser claimed deserves the rule table at all (a rule's hint word, or it
    reads like an error); a build log's lines are mostly neither, so this is the hot path."""
    return _hinted(line) or _reads_like_error(line)
