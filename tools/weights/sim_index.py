"""The repository as the load_weights interpreter sees it: parsed files, their classes, functions,
constants and `from` imports, followed across files (package `__init__` re-exports included)."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Module", "ModuleIndex"]


@dataclass
class Module:
    """One parsed source file: its top-level classes, functions, constants and `from` imports."""

    path: Path
    tree: ast.Module
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)
    functions: dict[str, ast.FunctionDef] = field(default_factory=dict)
    imports: dict[str, tuple[str | Path, str]] = field(default_factory=dict)
    constants: dict[str, ast.expr] = field(default_factory=dict)


class ModuleIndex:
    """Parses files of one repository on demand and follows `from pkg.mod import Name` into them."""

    def __init__(self, repo: Path):
        self.repo = Path(repo)
        self._mods: dict[Path, Module] = {}

    def load(self, path: Path) -> Module:
        path = Path(path).resolve()
        if path not in self._mods:
            tree = ast.parse(path.read_text(encoding="utf-8"))
            mod = Module(path, tree)
            for node in tree.body:
                if isinstance(node, ast.ClassDef):
                    mod.classes[node.name] = node
                elif isinstance(node, ast.FunctionDef):
                    mod.functions[node.name] = node
                elif isinstance(node, ast.ImportFrom) and (node.module or node.level):
                    # (the condition above: a module-less import is a relative one)
                    source = self._relative(path, node) if node.level or node.module is None else node.module
                    for alias in node.names:
                        mod.imports[alias.asname or alias.name] = (source, alias.name)
                elif (
                    isinstance(node, ast.Assign)
                    and len(node.targets) == 1
                    and isinstance(node.targets[0], ast.Name)
                ):
                    mod.constants[node.targets[0].id] = node.value
            self._mods[path] = mod
        return self._mods[path]

    @staticmethod
    def _relative(path: Path, node: ast.ImportFrom) -> Path:
        """`from .layer import x` / `from ..utils import y`: the module path the dots point at."""
        base = path.parent
        for _ in range(node.level - 1):
            base = base.parent
        return base.joinpath(*(node.module or "").split(".")) if node.module else base

    def _module_file(self, dotted: str | Path) -> Path | None:
        if isinstance(dotted, Path):
            bases, rel = [dotted.parent], Path(dotted.name)
        else:
            rel = Path(*dotted.split("."))
            bases = [self.repo, self.repo / "python", *sorted(p for p in self.repo.glob("*") if p.is_dir())]
        for base in bases:
            for candidate in (base / rel.with_suffix(".py"), base / rel / "__init__.py"):
                if candidate.is_file():
                    return candidate
        return None

    def resolve(self, mod: Module, name: str) -> tuple[Module, ast.AST] | None:
        """The class or function `name` as seen from `mod` (defined there or imported from the repo)."""
        if name in mod.classes:
            return mod, mod.classes[name]
        if name in mod.functions:
            return mod, mod.functions[name]
        if name in mod.imports:
            dotted, orig = mod.imports[name]
            file = self._module_file(dotted)
            if file is not None:
                other = self.load(file)
                # a package __init__ re-exports (`from .layer import f`): follow it one module further
                if (
                    orig in other.classes
                    or orig in other.functions
                    or (orig in other.imports and other is not mod)
                ):
                    return self.resolve(other, orig)
        return None

    def find_method(
        self, mod: Module, cls_name: str, method: str, skip_first: bool = False
    ) -> tuple[Module, ast.FunctionDef] | None:
        """(module, FunctionDef) of `method` on class `cls_name` or its bases, depth first."""
        found = self.resolve(mod, cls_name)
        if found is None or not isinstance(found[1], ast.ClassDef):
            return None
        cmod, cls = found[0], found[1]
        if not skip_first:
            for node in cls.body:
                if isinstance(node, ast.FunctionDef) and node.name == method:
                    return cmod, node
        for base in cls.bases:
            if isinstance(base, ast.Name) and (hit := self.find_method(cmod, base.id, method)):
                return hit
        return None

    def class_of(self, mod: Module, func: ast.FunctionDef) -> str | None:
        return next((c.name for c in mod.classes.values() if func in c.body), None)
