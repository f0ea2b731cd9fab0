"""Which Python statements run on ROCm: platform checks evaluated with 'unknown' as a third value.

A statement is dead on ROCm when it sits in a branch whose test is false there (`if is_cuda():`,
`if not is_hip():`, the `else` of `if torch.version.hip:`), or after an early exit taken on ROCm
(`if is_hip(): return`). An import is also guarded inside a `try` whose handlers catch ImportError
(or a broad Exception). Tests that are not platform checks are unknown, so what they guard counts
as reachable: `if envs.USE_DEEP_GEMM: import deep_gemm` still fails on ROCm when the flag is set.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

from tools.scan.catalog import CUDA_ONLY_MODULES

Tri = bool | None

# Last name component -> its truth on ROCm. `is_cuda_alike` is True on ROCm in vLLM.
_ROCM_TRUE = {
    "is_hip",
    "_is_hip",
    "is_rocm",
    "_is_rocm",
    "IS_ROCM",
    "IS_HIP",
    "on_rocm",
    "is_cuda_alike",
    "use_rocm",
    "USE_ROCM",
    "is_hip_",
    "_IS_ROCM",
    "_IS_HIP",
}
_ROCM_FALSE = {
    "is_cuda",
    "_is_cuda",
    "IS_CUDA",
    "_IS_CUDA",
    "is_nvidia",
    "_is_nvidia",
    "is_npu",
    "_is_npu",
    "is_xpu",
    "_is_xpu",
    "is_cpu",
    "_is_cpu",
    "is_hpu",
    "_is_hpu",
    "is_musa",
    "is_tpu",
    "TYPE_CHECKING",
}
_GENERIC_MODULES = frozenset({"cuda", "nvidia"})
"""Too generic to read an availability check from a function name (`is_cuda_available`)."""
_HIP_VALUE = "torch.version.hip"
_CUDA_VALUE = "torch.version.cuda"
_IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}


def dotted(node: ast.AST) -> str:
    """`a.b.c` for Name/Attribute chains (a call's function for Call), else ''."""
    if isinstance(node, ast.Call):
        node = node.func
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


def _kleene(op: ast.boolop, values: list[Tri]) -> Tri:
    if isinstance(op, ast.And):
        return False if False in values else (None if None in values else True)
    return True if True in values else (None if None in values else False)


def _compare(node: ast.Compare) -> Tri:
    if (
        len(node.ops) != 1
        or not isinstance(node.comparators[0], ast.Constant)
        or node.comparators[0].value is not None
    ):
        return None
    name = dotted(node.left)
    if name not in (_HIP_VALUE, _CUDA_VALUE):
        return None
    is_none = name == _CUDA_VALUE  # on ROCm torch.version.cuda is None, torch.version.hip is set
    op = node.ops[0]
    if isinstance(op, (ast.Is, ast.Eq)):
        return is_none
    if isinstance(op, (ast.IsNot, ast.NotEq)):
        return not is_none
    return None


def _availability_check(test: ast.expr) -> bool:
    """`has_deep_gemm()`, `is_flashinfer_available()`, `find_spec("flash_mla")`: a CUDA-only
    package's availability, which is false on ROCm where the package is not installed."""
    call = test.left if isinstance(test, ast.Compare) else test
    if not isinstance(call, ast.Call):
        return False
    name = dotted(call).rsplit(".", 1)[-1]
    if name == "find_spec":
        arg = call.args[0] if call.args else None
        return (
            isinstance(arg, ast.Constant)
            and isinstance(arg.value, str)
            and arg.value.split(".", 1)[0] in CUDA_ONLY_MODULES
        )
    named = any(m in name for m in CUDA_ONLY_MODULES - _GENERIC_MODULES)
    return named and (name.lstrip("_").startswith(("has_", "is_")) or name.endswith("available"))


def _availability_truth(test: ast.expr) -> Tri:
    if (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
    ):
        # find_spec(...) is None -> True on ROCm; is not None -> False
        return isinstance(test.ops[0], (ast.Is, ast.Eq))
    return False


def rocm_truth(test: ast.expr) -> Tri:
    """The value of a condition on ROCm: True, False, or None when it is not a platform check."""
    if _availability_check(test):
        return _availability_truth(test)
    if isinstance(test, ast.BoolOp):
        return _kleene(test.op, [rocm_truth(v) for v in test.values])
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = rocm_truth(test.operand)
        return None if inner is None else not inner
    if isinstance(test, ast.Compare):
        return _compare(test)
    name = dotted(test)
    if name == _HIP_VALUE:
        return True
    if name == _CUDA_VALUE:
        return False
    last = name.rsplit(".", 1)[-1]
    if last in _ROCM_TRUE:
        return True
    if last in _ROCM_FALSE:
        return False
    return None


def _and(a: Tri, b: Tri) -> Tri:
    return _kleene(ast.And(), [a, b])


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(dotted(t).rsplit(".", 1)[-1] in _IMPORT_ERRORS for t in types)


def exits(body: list[ast.stmt]) -> bool:
    last = body[-1] if body else None
    if isinstance(last, (ast.Return, ast.Raise, ast.Continue, ast.Break)):
        return True
    return isinstance(last, ast.Expr) and dotted(last.value) in ("sys.exit", "exit", "os._exit")


class Context:
    """Where a statement sits: its liveness on ROCm and whether an ImportError is caught around it.
    (A plain class, as the scan's other records: tools/scan/scanner.py's FileResult says why.)"""

    __slots__ = ("import_guarded", "live", "scope")

    def __init__(self, live: Tri, import_guarded: bool, scope: tuple[str, ...] = ()) -> None:
        self.live = live
        self.import_guarded = import_guarded
        self.scope = scope
        """Names around it, lowercased without underscores: enclosing defs and classes, and the names
        and strings its enclosing `if` tests read (`mxfp4_backend == Backend.FLASHINFER_TRTLLM`)."""


def _words(test: ast.expr) -> tuple[str, ...]:
    """The names an `if` test reads; none for an environment toggle (`os.environ.get("USE_DEEP_GEMM")`):
    a user can set it on ROCm too, so what it guards stays in scope."""
    nodes = list(ast.walk(test))
    if any(isinstance(n, ast.Attribute) and dotted(n) in ("os.environ", "os.getenv") for n in nodes):
        return ()
    out = []
    for node in nodes:
        word = getattr(node, "attr", None) or getattr(node, "id", None)
        if word is None and isinstance(node, ast.Constant) and isinstance(node.value, str):
            word = node.value
        if word:
            out.append(word.lower().replace("_", ""))
    return tuple(out)


def statements(
    body: list[ast.stmt], ctx: Context | None = None, wanted: Callable[[ast.stmt], bool] | None = None
) -> Iterator[tuple[ast.stmt, Context]]:
    """Every statement of a module, nested ones included, with its ROCm context. `wanted`: a
    statement it rejects is neither yielded nor entered (nested statements lie within its lines),
    though an early exit in it still counts for the statements after it."""
    ctx = ctx or Context(True, False)
    live = ctx.live
    for stmt in body:
        if wanted is None or wanted(stmt):
            here = Context(live, ctx.import_guarded, ctx.scope)
            yield stmt, here
            yield from _children(stmt, here, wanted)
        if isinstance(stmt, ast.If) and not stmt.orelse and exits(stmt.body):
            cond = rocm_truth(stmt.test)
            live = _and(live, None if cond is None else not cond)
        elif isinstance(stmt, ast.Assert):
            live = _and(live, rocm_truth(stmt.test))


def _children(
    stmt: ast.stmt, ctx: Context, wanted: Callable[[ast.stmt], bool] | None
) -> Iterator[tuple[ast.stmt, Context]]:
    if isinstance(stmt, ast.If):
        cond = rocm_truth(stmt.test)
        scope = ctx.scope + _words(stmt.test)
        yield from statements(stmt.body, Context(_and(ctx.live, cond), ctx.import_guarded, scope), wanted)
        other = None if cond is None else not cond
        yield from statements(stmt.orelse, Context(_and(ctx.live, other), ctx.import_guarded, scope), wanted)
    elif isinstance(stmt, (ast.Try, ast.TryStar)):
        guarded = ctx.import_guarded or any(_catches_import_error(h) for h in stmt.handlers)
        yield from statements(stmt.body, Context(ctx.live, guarded, ctx.scope), wanted)
        for handler in stmt.handlers:
            yield from statements(handler.body, ctx, wanted)
        yield from statements(stmt.orelse, ctx, wanted)
        yield from statements(stmt.finalbody, ctx, wanted)
    else:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            ctx = Context(ctx.live, ctx.import_guarded, (*ctx.scope, stmt.name.lower().replace("_", "")))
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, field, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                yield from statements(inner, ctx, wanted)
        for case in getattr(stmt, "cases", []) or []:
            yield from statements(case.body, ctx, wanted)


def own_nodes(stmt: ast.stmt) -> Iterator[ast.AST]:
    """The expression nodes of a statement itself, not of the statements nested in it."""
    stack: list[ast.AST] = [stmt]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(
            child
            for child in ast.iter_child_nodes(node)
            if not isinstance(child, (ast.stmt, ast.ExceptHandler, ast.match_case))
        )
