"""Prove a Python patch by importing the module it touches, before and after, in the build sandbox.

py_compile only proves syntax: a guard that hides `torch` behind `torch.version.hip` compiles and then
raises NameError on import. The module is imported with the patch; when that fails it is imported once
more without the patch, and the patch is kept only when the failure is the same one the module already
had (the sandbox lacks a dependency), never a new one the patch caused.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from agent.patch.identity import first_error
from sandboxes.base import Sandbox
from sandboxes.local import LocalSandbox
from tools.patching import apply_diff, revert_diff
from tools.records import CheckResult

IMPORT = (
    "{python} -c 'import importlib, sys; sys.path.insert(0, \".\"); importlib.import_module(sys.argv[1])' "
    "{module}"
)


def module_name(rel: str) -> str:
    """`pkg/sub/mod.py` -> `pkg.sub.mod`; a package's `__init__.py` is the package."""
    return rel[:-3].replace("/", ".").removesuffix(".__init__")


def _last_line(output: str) -> str:
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    return lines[-1][:300] if lines else "no output"


def import_check(
    box: Sandbox, python: str, root: Path, rel: str, diff: str, timeout: float = 300
) -> CheckResult:
    """Import the touched module with the patch applied (it is applied on entry and on return)."""
    cmd = IMPORT.format(python=python, module=shlex.quote(module_name(rel)))
    after = box.run(cmd, timeout=timeout)
    name = f"import {module_name(rel)}"
    if after.ok:
        return CheckResult(
            name=name, ok=True, detail="imports", cmd=cmd, duration_s=round(after.duration_s, 2)
        )
    revert_diff(root, diff)
    try:
        before = box.run(cmd, timeout=timeout)
    finally:
        apply_diff(root, diff)
    err_after, err_before = _last_line(after.output), _last_line(before.output)
    if not before.ok and err_before == err_after:
        return CheckResult(
            name=name,
            ok=True,
            cmd=cmd,
            detail=f"not proven by import: it fails the same way without the patch ({err_after})",
        )
    why = "the patch breaks the import" if before.ok else "the patch changes how the import fails"
    return CheckResult(name=name, ok=False, detail=f"{why}: {err_after}", cmd=cmd)


def python_checks(box: Sandbox, python: str, root: Path, files: list[str], diff: str) -> list[CheckResult]:
    """Touched Python files must byte-compile (here), then import in the build sandbox `box`."""
    checks = []
    local = LocalSandbox(root)
    try:
        for rel in files:
            res = local.run(f"{shlex.quote(sys.executable)} -m py_compile {shlex.quote(rel)}", timeout=60)
            detail = "compiles" if res.ok else first_error(res.output)
            checks.append(
                CheckResult(
                    name=f"py_compile {rel}",
                    ok=res.ok,
                    detail=detail,
                    cmd=res.cmd,
                    duration_s=round(res.duration_s, 2),
                )
            )
            if res.ok:
                checks.append(import_check(box, python, root, rel, diff))
    finally:
        local.close()
    return checks
