"""A model's module tree for the AutoWeightsLoader replay: which dotted paths are modules, parameters,
and modules with their own load_weights.

From the model built on the meta device it is exact (its parameter names and the classes of the
modules that define load_weights). Without it, it is read from the `__init__` assignments of the model
file's classes (`self.mlp = Glm4MoE(...)`, `make_layers(n, lambda prefix: Layer(...))`,
`nn.ModuleList([... for i in range(n)])`): both branches of an `if` count, and a framework layer
(a class outside the model files: linear, norm, fused MoE) is a leaf whose parameters are not listed,
so any name under it counts as loaded.
"""

from __future__ import annotations

import ast
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from tools.weights.sim_eval import Interp, ModuleIndex
from tools.weights.sim_index import Module
from tools.weights.sim_values import Config, Env

MAX_DEPTH = 12


@dataclass
class ModuleTree:
    params: set[str] | None
    """Registered parameter names (None: not known; then `static_params` and `opaque` decide)."""
    modules: set[str] = field(default_factory=set)
    loaders: dict[str, tuple[Path, str]] = field(default_factory=dict)
    """Module path -> (file, class) of modules that define load_weights."""
    opaque: set[str] = field(default_factory=set)
    static_params: set[str] = field(default_factory=set)

    def is_param(self, path: str) -> bool:
        return path in (self.params if self.params is not None else self.static_params)

    def is_module(self, path: str) -> bool:
        return path in self.modules

    def is_opaque(self, path: str) -> bool:
        return self.params is None and path in self.opaque

    @property
    def known(self) -> bool:
        """Anything was read (a class without a readable `__init__` tells nothing: then every name may load)."""
        return self.params is not None or len(self.modules) > 1 or bool(self.opaque or self.static_params)

    def may_hold(self, name: str) -> bool:
        """Could the model register parameter `name`: its path runs through modules to a framework layer
        (whose parameters are not listed) or to a parameter assigned in an `__init__`."""
        if not self.known:
            return True
        parts = name.split(".")
        for i in range(1, len(parts) + 1):
            path = ".".join(parts[:i])
            if path in self.opaque or (i == len(parts) and path in self.static_params):
                return True
            if path not in self.modules:
                return False
        return False


def tree_from_meta(params: Collection[str], loaders: dict[str, str], index: ModuleIndex) -> ModuleTree:
    """The exact tree of a model built on the meta device: every dotted prefix of a parameter is a module."""
    tree = ModuleTree(set(params), {""})
    for name in params:
        parts = name.split(".")
        tree.modules.update(".".join(parts[:i]) for i in range(1, len(parts)))
    for path, qualname in loaders.items():
        module, _, cls = qualname.rpartition(".")
        file = index._module_file(module)
        if file is not None:
            tree.loaders[path] = (file, cls)
    return tree


class StaticTree:
    """Reads the module tree from `__init__` bodies; classes outside `model_dir` are leaves."""

    def __init__(self, index: ModuleIndex, config: Env, model_dir: Path) -> None:
        self.index, self.model_dir = index, model_dir.resolve()
        self.interp = Interp(index, config, None)
        self._cache: dict[tuple[Path, str], ModuleTree] = {}
        self._env: Env = {"config": self.interp.config}

    def build(self, mod: Module, cls: str) -> ModuleTree:
        return self._subtree(mod, cls, 0)

    def _subtree(self, mod: Module, cls: str, depth: int) -> ModuleTree:
        found = self.index.resolve(mod, cls)
        if found is None or not isinstance(found[1], ast.ClassDef):
            return ModuleTree(None, {""})
        key = (found[0].path, cls)
        if key not in self._cache:
            self._cache[key] = ModuleTree(None, {""})  # a guard against self-reference while building
            self._cache[key] = self._read(found[0], found[1], depth)
        return self._cache[key]

    def _read(self, mod: Module, node: ast.ClassDef, depth: int) -> ModuleTree:
        tree = ModuleTree(None, {""})
        for init_mod, init in self._inits(mod, node):
            self._env = self._self_values(init, init_mod)
            for stmt in ast.walk(init):
                if isinstance(stmt, ast.Assign):
                    attrs = _self_attrs(stmt.targets)
                    if _make_layers_value(stmt):  # `start, end, self.layers = make_layers(...)`
                        attrs = attrs[-1:]
                    for attr in attrs:
                        self._child(tree, attr, stmt.value, init_mod, depth)
        return tree

    def _self_values(self, init: ast.FunctionDef, mod: Module) -> Env:
        """`config` and the plain values `self.x = <config expression>` takes, in statement order
        (`self.mtp_start_layer_idx = config.num_hidden_layers`), for sizing ModuleDicts and layer lists."""
        attrs: Env = {}
        env = {"config": self.interp.config, "self": Config(attrs)}
        for stmt in init.body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                names = _self_attrs(stmt.targets)
                value = self.interp.eval(stmt.value, env, mod, None) if names else None
                if names and isinstance(value, (int, str, bool)):
                    attrs[names[0]] = value
        return env

    def _inits(self, mod: Module, node: ast.ClassDef) -> list[tuple[Module, ast.FunctionDef]]:
        """`__init__` of the class and of its bases in the repository (subclass first)."""
        out: list[tuple[Module, ast.FunctionDef]] = []
        todo = [(mod, node)]
        while todo:
            cmod, cnode = todo.pop(0)
            out += [(cmod, f) for f in cnode.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"]
            for base in cnode.bases:
                hit = self.index.resolve(cmod, base.id) if isinstance(base, ast.Name) else None
                if hit is not None and isinstance(hit[1], ast.ClassDef):
                    todo.append((hit[0], hit[1]))
        return out

    def _child(self, tree: ModuleTree, attr: str, value: ast.expr, mod: Module, depth: int) -> None:
        """One `self.<attr> = <value>` assignment."""
        call = value if isinstance(value, ast.Call) else None
        if call is None:
            return
        name = _callee(call)
        if name in ("Parameter", "nn.Parameter"):
            tree.static_params.add(attr)
            return
        layers = self._repeated(call, mod)
        if layers is not None:
            keys, inner = layers
            tree.modules.add(attr)
            for key in keys:
                self._child(tree, f"{attr}.{key}", inner, mod, depth)
            return
        hit = self.index.resolve(mod, name.rsplit(".", 1)[-1]) if name else None
        if hit is None or not isinstance(hit[1], ast.ClassDef) or depth >= MAX_DEPTH:
            tree.opaque.add(attr)  # a factory function or a framework layer: its params are not listed
            return
        if hit[0].path.parent != self.model_dir:
            tree.opaque.add(attr)
            return
        tree.modules.add(attr)
        sub = self._subtree(hit[0], hit[1].name, depth + 1)
        if self.index.find_method(hit[0], hit[1].name, "load_weights") is not None:
            tree.loaders[attr] = (hit[0].path, hit[1].name)
        _graft(tree, attr, sub)

    def _repeated(self, call: ast.Call, mod: Module) -> tuple[list[str], ast.expr] | None:
        """(child keys, element) of `make_layers(n, lambda prefix: X(...))`,
        `nn.ModuleList([X(...) for _ in range(n)])` or `nn.ModuleDict({str(i): X(...) for i in range(a, b)})`."""
        name = _callee(call)
        env = self._env  # `config` (vLLM: `vllm_config.model_config.hf_config`) and known `self.x` values
        if name.endswith("make_layers") and len(call.args) >= 2 and isinstance(call.args[1], ast.Lambda):
            count = self.interp.eval(call.args[0], env, mod, None)
            return ([str(i) for i in range(count)], call.args[1].body) if isinstance(count, int) else None
        if name.endswith(("ModuleList", "ModuleDict")) and call.args:
            comp = call.args[0]
            if isinstance(comp, (ast.ListComp, ast.DictComp)) and len(comp.generators) == 1:
                items = self.interp.eval(comp.generators[0].iter, env, mod, None)
                if isinstance(items, (list, range)):
                    # a ModuleDict keyed by str(index) (MTP layers at num_hidden_layers + i) keeps the index
                    keys = [str(x) for x in items] if isinstance(comp, ast.DictComp) else None
                    elt = comp.elt if isinstance(comp, ast.ListComp) else comp.value
                    return keys or [str(i) for i in range(len(list(items)))], elt
        return None


def _graft(tree: ModuleTree, prefix: str, sub: ModuleTree) -> None:
    def join(p: str) -> str:
        return f"{prefix}.{p}" if p else prefix

    tree.modules.update(join(p) for p in sub.modules)
    tree.opaque.update(join(p) for p in sub.opaque)
    tree.static_params.update(join(p) for p in sub.static_params)
    tree.loaders.update({join(p): v for p, v in sub.loaders.items()})


def _self_attrs(targets: list[ast.expr]) -> list[str]:
    out: list[str] = []
    for t in targets:
        elts = t.elts if isinstance(t, ast.Tuple) else [t]
        out.extend(
            e.attr
            for e in elts
            if isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name) and e.value.id == "self"
        )
    return out


def _callee(call: ast.Call) -> str:
    try:
        return ast.unparse(call.func)
    except Exception:  # noqa: BLE001 - an odd callee is just unnamed
        return ""


def _make_layers_value(stmt: ast.Assign) -> bool:
    return isinstance(stmt.value, ast.Call) and _callee(stmt.value).endswith("make_layers")


__all__ = ["ModuleTree", "StaticTree", "tree_from_meta"]
