"""`torch.version.cuda` on ROCm: it is None there, which is a platform check or a bug.

`if torch.version.cuda:` (or `is not None`) is a platform check like `is_cuda()`: what it guards is
dead on ROCm, and that is how CUDA-only code is guarded, so it is not reported. Reported are the
uses that break ROCm: an `assert` on it, an `if torch.version.cuda is None: raise`, and value uses
that crash on None (`version.parse(torch.version.cuda)`, `torch.version.cuda.split(".")`) with no
None check in the same statement.
"""

from __future__ import annotations

import ast

from tools.scan.python_guards import dotted, exits, rocm_truth

CUDA_VERSION = "torch.version.cuda"


def _is_cuda_version(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and dotted(node) == CUDA_VERSION


def _checks_none(node: ast.AST) -> bool:
    """A truthiness or None test of torch.version.cuda, which makes later value uses safe."""
    if isinstance(node, ast.Compare):
        return _is_cuda_version(node.left) and any(
            isinstance(c, ast.Constant) and c.value is None for c in node.comparators
        )
    if isinstance(node, ast.BoolOp):
        return any(_is_cuda_version(v) for v in node.values)
    if isinstance(node, (ast.If, ast.While, ast.IfExp)):
        return _is_cuda_version(node.test)
    return False


def _crash_use(node: ast.AST, parent: ast.AST | None) -> bool:
    if isinstance(parent, ast.Call):
        return node in parent.args or any(k.value is node for k in parent.keywords)
    return isinstance(parent, (ast.Attribute, ast.Subscript)) and getattr(parent, "value", None) is node


def cuda_gate_problem(stmt: ast.stmt, nodes: list[ast.AST]) -> tuple[ast.AST, str] | None:
    """(the torch.version.cuda node, what goes wrong on ROCm), or None when nothing does."""
    uses = [n for n in nodes if _is_cuda_version(n)]
    if not uses:
        return None
    if isinstance(stmt, ast.Assert):
        return uses[0], "an assert on torch.version.cuda fails on ROCm"
    if isinstance(stmt, ast.If) and rocm_truth(stmt.test) is True and exits(stmt.body):
        return uses[0], "the torch.version.cuda check stops ROCm here"
    if any(_checks_none(n) for n in [stmt, *nodes]):
        return None
    parents = {child: node for node in nodes for child in ast.iter_child_nodes(node)}
    for use in uses:
        if _crash_use(use, parents.get(use)):
            return use, "torch.version.cuda is None on ROCm: this use raises"
    return None
