"""Python-side ROCm hazards, read with `ast`: CUDA-only imports, e4m3fn without fnuz, CUDA-only gates.

Which packages count as CUDA-only is in catalog.CUDA_ONLY_MODULES.
"""

from __future__ import annotations

import ast
import bisect

from tools.cpp.source import SourceText
from tools.records import Failure
from tools.regex_memo import compile_pattern
from tools.scan.catalog import CUDA_ONLY_MODULES, Construct, is_ptx
from tools.scan.findings import make_finding
from tools.scan.ptx import ptx_opcodes
from tools.scan.python_gates import cuda_gate_problem
from tools.scan.python_guards import Context, dotted, own_nodes, statements
from tools.scan.python_reach import PLAIN_NEEDLES, vendor_module

# Cheap pre-filter and locator: a Python finding needs one of these on its statement's lines.
PY_CANDIDATES = compile_pattern(
    r"(?:import|from)[ \t]+(?:[\w.]+[ \t]*,[ \t]*)*(?:" + "|".join(sorted(CUDA_ONLY_MODULES)) + r")\b"
    r"|import_module|__import__|float8_e4m3fn\b|version\.cuda|inline_asm_elementwise"
)
_FNUZ_HANDLING = compile_pattern(r"fnuz|\bfp8_dtype\b|gfx95\d|\bocp\b|OCP|nvfp4|NVFP4|mxfp|MXFP")
"""The file handles ROCm's fnuz, or uses e4m3fn where it is right on ROCm too: gfx950's OCP fp8, and
the e4m3fn block scales of NVFP4/MXFP formats."""
_IMPORT = Construct(
    "cuda_only_dep",
    "platform_guarded_import",
    "CUDA-only package; guard by platform first and catch import errors, with a fallback",
)
_E4M3FN = Construct(
    "fp8_layout",
    "fp8_fnuz_normalize",
    "e4m3fn with no fnuz handling; gfx942 (MI300) needs e4m3fnuz weights and doubled scales",
)
_CUDA_GATE = Construct(
    "cuda_only_dep",
    "platform_gate",
    "torch.version.cuda is None on ROCm; check torch.version.hip / the platform too",
)
_TRITON_ASM = Construct(
    "inline_ptx", "triton_asm_to_tl_math", "Triton inline PTX; use tl.math / a HIP-specific path on ROCm"
)
_HIP_MARKERS = ("hip", "rocm", "cuda_alike")
_IMPORT_CALLS = ("importlib.import_module", "import_module", "__import__")


def _imported_modules(stmt: ast.stmt) -> list[str]:
    if isinstance(stmt, ast.Import):
        return [a.name for a in stmt.names]
    if isinstance(stmt, ast.ImportFrom) and stmt.level == 0 and stmt.module:
        return [stmt.module]
    return []


def _dynamic_imports(stmt: ast.stmt) -> list[str]:
    return [
        node.args[0].value
        for node in own_nodes(stmt)
        if isinstance(node, ast.Call)
        and dotted(node) in _IMPORT_CALLS
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    ]


def _offset(src: SourceText, node: ast.AST) -> int:
    return src.offset_of(getattr(node, "lineno", 1), getattr(node, "col_offset", 0))


def _region(ctx: Context) -> str:
    return "common" if ctx.live is True else "conditional"


def cuda_only_module(path: str) -> bool:
    """True for a module that exists to wrap a CUDA-only package (`flashinfer_backend.py`,
    `deep_gemm_wrapper/`, `cutlass_mla.py`, `gdn_chunk_cutedsl/`) or one NVIDIA architecture
    (`..._sm90.py`): a ROCm run imports it only when that backend is chosen, which platform
    selection never does, so its own imports of CUDA-only packages are not findings.
    (An approximation of "reachable from the ROCm entry points"; the import that selects the module
    is where a guard belongs.)"""
    parts = [p.removesuffix(".py") for p in path.lower().replace("-", "_").split("/")]
    return any(
        _NVIDIA_ARCH.search(p)
        or p in _WRAPPED
        or p.startswith(_WRAPPED_PREFIXES)
        or p.endswith(_WRAPPED_SUFFIXES)
        for p in parts
    )


def backend_scope(ctx: Context, package: str) -> bool:
    """An import inside a def or class named after the package, or under an `if` that selects it
    (`if backend == "flashinfer"`, `class DeepEPAll2AllManager`): that backend's own code, which
    ROCm platform selection does not choose."""
    if package in _GENERIC_PACKAGES:
        return False
    names = [n.replace("_", "") for n in _ALIASES.get(package, (package,)) if n != "cute"]
    return any(n in word for word in ctx.scope for n in names)


_GENERIC_PACKAGES = frozenset({"cuda", "nvidia"})
"""Too common in file names (cuda_graph_runner.py) to say a module wraps the package."""
_ALIASES = {
    "cutlass": ("cutlass", "cute", "cutedsl", "cute_dsl"),
    "flash_mla": ("flash_mla", "flashmla"),
    "deep_gemm": ("deep_gemm", "deepgemm"),
    "deep_ep": ("deep_ep", "deepep"),
    "flashinfer": ("flashinfer", "trtllm"),
}
"""Names a module or backend goes by (TRT-LLM kernels ship in flashinfer); `cute` only as a whole
file-name part, never inside a word (execute)."""
_WRAPPED = frozenset(
    n for package in CUDA_ONLY_MODULES - _GENERIC_PACKAGES for n in _ALIASES.get(package, (package,))
)
_WRAPPED_PREFIXES = tuple(n + "_" for n in sorted(_WRAPPED))
_WRAPPED_SUFFIXES = tuple("_" + n for n in sorted(_WRAPPED))
_NVIDIA_ARCH = compile_pattern(r"(?:^|_)sm_?(?:[789]\d|1[0-2]\d)a?(?:$|_)")
"""A module for one NVIDIA architecture (`bf16x3_router_gemm_sm90`, `cutlass_sm100_mla`)."""


def _in_comparison(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    """`x.dtype == torch.float8_e4m3fn`, `dtype in (..., float8_e4m3fn)`: a test creates no tensor."""
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.Compare):
            return True
    return False


def _ptx_asm(call: ast.Call) -> bool:
    """Whether a tl.inline_asm_elementwise call's template is PTX (AMDGCN such as `s_waitcnt` is
    what ROCm kernels use); a template that is not a literal counts as PTX."""
    template = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "asm"), None)
    if not (isinstance(template, ast.Constant) and isinstance(template.value, str)):
        return True
    return is_ptx(ptx_opcodes(template.value))


def _import_findings(src: SourceText, stmt: ast.stmt, ctx: Context) -> list[Failure]:
    out = []
    for module in _imported_modules(stmt) + _dynamic_imports(stmt):
        top = module.split(".", 1)[0]
        if (
            top not in CUDA_ONLY_MODULES
            or ctx.import_guarded
            or cuda_only_module(src.path)
            or backend_scope(ctx, top)
        ):
            continue
        out.append(
            make_finding(
                src,
                _offset(src, stmt),
                _IMPORT,
                top,
                f"import of {module} runs on ROCm: {_IMPORT.note}",
                region=_region(ctx),
                per_occurrence=True,
                facts={"module": module},
            )
        )
    return out


def _mentions_hip(nodes: list[ast.AST]) -> bool:
    for node in nodes:
        name = dotted(node) if isinstance(node, (ast.Name, ast.Attribute, ast.Call)) else ""
        if any(marker in name.lower() for marker in _HIP_MARKERS):
            return True
    return False


_CANDIDATE_NEEDLES = ("import", "from", *(n.decode() for n in PLAIN_NEEDLES if b"import" not in n))
"""Every PY_CANDIDATES match holds one of these: an import statement's keyword, or one of the pre-filter's
plain words (import_module and __import__ hold `import`)."""


def _candidate_lines(src: SourceText) -> list[int]:
    """Lines holding a PY_CANDIDATES match. The pattern has no literal prefix, so a search over the
    whole file tries it at every character (a fifth of the Python scan of vLLM's package); it runs
    only on lines with a needle, found at memchr speed. A match never spans lines, so the first one
    on a line is where a search from the line's start finds it."""
    raw = src.raw
    line_starts = set()
    for needle in _CANDIDATE_NEEDLES:
        at = raw.find(needle)
        while at >= 0:
            line_starts.add(raw.rfind("\n", 0, at) + 1)
            end = raw.find("\n", at)
            at = raw.find(needle, end) if end >= 0 else -1
    offsets = []
    for start in sorted(line_starts):
        end = raw.find("\n", start)
        m = PY_CANDIDATES.search(raw, start, len(raw) if end < 0 else end)
        if m:
            offsets.append(m.start())
    return src.lines_at(offsets)


def _touches(lines: list[int], stmt: ast.stmt) -> bool:
    i = bisect.bisect_left(lines, stmt.lineno)
    return i < len(lines) and lines[i] <= (stmt.end_lineno or stmt.lineno)


def python_findings(src: SourceText) -> tuple[list[Failure], str | None]:
    """Findings of one Python file, and a note when it could not be parsed (then no findings)."""
    lines = _candidate_lines(src)
    if not lines or vendor_module(src.path):
        return [], None
    try:
        tree = ast.parse(src.raw, filename=src.path)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return [], f"not parsed as Python ({type(exc).__name__}: line {getattr(exc, 'lineno', '?')})"
    out: list[Failure] = []
    e4m3fn: list[ast.expr] = []
    # Statements away from every candidate line are not entered at all: most of a big module.
    for stmt, ctx in statements(tree.body, wanted=lambda stmt: _touches(lines, stmt)):
        if ctx.live is False:
            continue
        out += _import_findings(src, stmt, ctx)
        nodes = sorted(
            (n for n in own_nodes(stmt) if hasattr(n, "lineno")),
            key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)),
        )
        # only Attribute (.attr) and Name (.id) nodes can match: both are expressions
        named = [
            n
            for n in nodes
            if isinstance(n, ast.expr) and getattr(n, "attr", getattr(n, "id", None)) == "float8_e4m3fn"
        ]
        if named:
            parents = {child: node for node in nodes for child in ast.iter_child_nodes(node)}
            e4m3fn += [n for n in named if not _in_comparison(n, parents)]
        problem = None if _mentions_hip(nodes) else cuda_gate_problem(stmt, nodes)
        if problem:
            out.append(
                make_finding(
                    src,
                    _offset(src, problem[0]),
                    _CUDA_GATE,
                    "torch.version.cuda",
                    problem[1],
                    region=_region(ctx),
                    per_occurrence=True,
                )
            )
        for call in (n for n in nodes if isinstance(n, ast.Call)):
            if dotted(call).endswith("inline_asm_elementwise") and _ptx_asm(call):
                out.append(
                    make_finding(
                        src,
                        _offset(src, call),
                        _TRITON_ASM,
                        "inline_asm_elementwise",
                        f"tl.inline_asm_elementwise: {_TRITON_ASM.note}",
                        region=_region(ctx),
                        per_occurrence=True,
                    )
                )
    if e4m3fn and not _FNUZ_HANDLING.search(src.raw):
        used = sorted({n.lineno for n in e4m3fn})
        out.append(
            make_finding(
                src,
                _offset(src, e4m3fn[0]),
                _E4M3FN,
                "float8_e4m3fn",
                f"torch.float8_e4m3fn used with no fnuz handling in the file: {_E4M3FN.note}",
                region="common",
                facts={"occurrences": len(e4m3fn), "lines": used[:50]},
            )
        )
    return out, None
