"""cuda_only_dep: a CUDA-only Python import gets a platform-first guard with a None fallback.

The guard uses the platform helper the repo already has (`is_hip()`, `platform.is_rocm()`, ...), else
`torch.version.hip`. A guard is only proposed when the code has a fallback path: the imported names
are unused beyond the import, or the code already checks them for None. Otherwise guarding would only
move the failure to the first call, so the rule declines and says so.
"""

from __future__ import annotations

import re

from agent.proposers.rules.base import Decline, Workspace, make_proposal, register
from agent.proposers.rules.headers import target_file
from tools.records import Failure, Proposal

_HELPER_CALL = re.compile(r"\b((?:\w+\.)*)(is_hip|is_rocm|is_cuda)\(\)")
_HELPER_DEF = re.compile(r"^def (is_hip|is_rocm|is_cuda)\(\)", re.MULTILINE)
NEVER_GUARD = {"torch", "numpy", "triton", "typing", "os", "sys", "re"}
"""Imports every platform needs: a guard around them moves the failure instead of removing it."""
BROAD = "(ImportError, AssertionError, OSError, RuntimeError)"
"""CUDA-only wheels fail to import in more ways than ImportError (flashinfer asserts, .so load errors)."""


def import_statement(lines: list[str], module: str) -> tuple[int, int, list[str]] | None:
    """(first, last) line index of a top-level import of `module`, and the names it binds."""
    pat = re.compile(
        rf"^(?:import\s+{module}(?:\.\w+)*(?:\s+as\s+(\w+))?\s*(?:#.*)?$|from\s+{module}(?:\.\w+)*\s+import\s+(.+))"
    )
    for i, line in enumerate(lines):
        m = pat.match(line.rstrip("\n"))
        if not m:
            continue
        if m.group(2) is None:
            return i, i, [m.group(1) or module]
        end, names_text = i, m.group(2)
        if names_text.lstrip().startswith("(") and ")" not in names_text:
            while end + 1 < len(lines) and ")" not in lines[end]:
                end += 1
            names_text = " ".join(ln.strip() for ln in lines[i : end + 1]).split("import", 1)[1]
        names_text = names_text.split("#", 1)[0].replace("(", " ").replace(")", " ")
        names = [part.split(" as ")[-1].strip() for part in names_text.split(",") if part.strip()]
        return i, end, names
    return None


def _module_of(rel: str) -> str:
    return rel[:-3].replace("/", ".").removesuffix(".__init__")


def platform_guard(ws: Workspace, text: str, guarded_at: int) -> tuple[str, str | None]:
    """(condition true on CUDA, import line to add or None), from the repo's own platform helper;
    `torch.version.hip` only when `import torch` runs before offset `guarded_at` (the guarded import)."""
    m = _HELPER_CALL.search(text)
    if m:
        call, root = m.group(0), (m.group(1) or "").split(".")[0]
        if root and not re.search(
            rf"^(?:from\s+\S+\s+)?import\s+.*\b{re.escape(root)}\b", text[:guarded_at], re.MULTILINE
        ):
            raise Decline(
                f"the platform helper `{root}` is bound after the CUDA-only import, so a guard using it "
                f"would raise NameError; move its import above first (by hand)"
            )
        return (call if m.group(2) == "is_cuda" else f"not {call}"), None
    for path in sorted(ws.root.rglob("*.py")):
        rel = str(path.relative_to(ws.root))
        if any(
            part.startswith(".") or part in ("tests", "build") for part in path.relative_to(ws.root).parts
        ):
            continue
        d = _HELPER_DEF.search(ws.read(rel) or "")
        if d:
            mod = _module_of(rel)
            parent, _, leaf = mod.rpartition(".")
            if parent and re.search(
                rf"^from\s+{re.escape(parent)}\s+import\s+.*\b{leaf}\b", text, re.MULTILINE
            ):
                call = f"{leaf}.{d.group(1)}()"
                return (call if d.group(1) == "is_cuda" else f"not {call}"), None
            call = f"{d.group(1)}()"
            return (call if d.group(1) == "is_cuda" else f"not {call}"), f"from {mod} import {d.group(1)}\n"
    if re.search(r"^import torch\s*$", text[:guarded_at], re.MULTILINE):  # bound before the guard runs
        return "torch.version.hip is None", None
    raise Decline("no platform helper (is_hip/is_rocm/is_cuda) in the repo and no torch import to key on")


def has_fallback(text: str, names: list[str], first: int, last: int) -> list[str]:
    """Names used beyond the import without any None check (empty when every use has a fallback)."""
    rest = "".join(ln for i, ln in enumerate(text.splitlines(keepends=True)) if not first <= i <= last)
    missing = []
    for name in names:
        n = re.escape(name)
        used = re.search(rf"\b{n}\b", rest)
        checked = re.search(rf"\b{n}\s+is\s+(?:not\s+)?None|\bif\s+(?:not\s+)?{n}\b|{n}\s*[!=]=\s*None", rest)
        if used and not checked:
            missing.append(name)
    return missing


class CudaOnlyImportFixer:
    """CUDA-only imports -> `if <on CUDA>: try: import ... except ...: None`."""

    family = "python_imports"
    kinds: tuple[str, ...] = ("cuda_only_dep",)

    def propose(self, failure: Failure, ws: Workspace) -> Proposal | None:
        module = (failure.symbol or failure.facts.get("module") or "").split(".")[0]
        rel = target_file(failure)
        if not module or not rel.endswith(".py"):
            return None
        text = ws.read(rel)
        if text is None:
            return None
        lines = text.splitlines(keepends=True)
        if module in NEVER_GUARD or module == rel.split("/", 1)[0]:
            raise Decline(
                f"{module} is needed on every platform (torch, or the repo's own package): guarding its "
                f"import would only turn the failure into a NameError; fix what {module} fails on instead"
            )
        found = import_statement(lines, re.escape(module))
        if found is None:
            if re.search(
                rf"^\s+(?:from\s+{re.escape(module)}\b|import\s+{re.escape(module)}\b)", text, re.MULTILINE
            ):
                raise Decline(
                    f"{rel} imports {module} only inside a function or block: it runs where it is used, "
                    f"so there is no module-level import to guard"
                )
            return None
        first, last, names = found
        others = [
            i + 1 for i, ln in enumerate(lines) if i > last and import_statement([ln], re.escape(module))
        ]
        if others:
            raise Decline(
                f"{rel} imports {module} again at line(s) {', '.join(map(str, others[:5]))}: guarding one "
                f"import would leave the others failing; the file is CUDA-only, exclude it on ROCm instead"
            )
        missing = has_fallback(text, names, first, last)
        if missing:
            raise Decline(
                f"{rel} uses {', '.join(missing)} with no fallback path (no None check): guarding the "
                f"import would only move the failure to the first call; add a triton/torch fallback first"
            )
        cond, helper_import = platform_guard(ws, text, sum(len(ln) for ln in lines[:first]))
        body = [
            "        " + ln.lstrip() if j else "        " + ln for j, ln in enumerate(lines[first : last + 1])
        ]
        guard = [
            f"if {cond}:\n",
            "    try:\n",
            *body,
            f"    except {BROAD}:\n",
            *[f"        {name} = None\n" for name in names],
            "else:\n",
            *[f"    {name} = None\n" for name in names],
        ]
        new_lines = lines[:first] + guard + lines[last + 1 :]
        if helper_import:
            new_lines.insert(first, helper_import)
        new = "".join(new_lines)
        return make_proposal(
            failure,
            self.family,
            {rel: (text, new)},
            (
                f"{rel}: import {module} only on CUDA ({cond}), falling back to None elsewhere or when the import "
                f"fails; the code already handles {', '.join(names)} being None (or never uses it), so ROCm takes "
                f"the existing fallback path."
            ),
            ws=ws,
        )


register(CudaOnlyImportFixer())
