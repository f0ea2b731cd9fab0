"""The interpreter behind tools.weights.load_sim: evaluates a load_weights body's AST on one name.

Values are plain Python values, the model config (attribute access over config.json), `self`
(whose `config` is that config; other attributes are Unknown), the registered parameter set and
Unknown. Unknown conditions count as false and their lines are recorded by the caller.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

from tools.weights.sim_expr import eval_expr
from tools.weights.sim_values import (
    BUILTINS,
    UNKNOWN,
    Config,
    Function,
    ParamsDict,
    SelfObj,
    SimError,
    Trace,
    Unknown,
    binop,
    call_method,
    compare_op,
    expert_params_mapping,
)

__all__ = ["Interp", "ModuleIndex", "SimError", "Unknown"]
MAX_DEPTH = 24


class _Continue(Exception):
    pass


class _Break(Exception):
    pass


class _Return(Exception):
    def __init__(self, value):
        self.value = value


@dataclass
class Module:
    """One parsed source file: its top-level classes, functions, constants and `from` imports."""

    path: Path
    tree: ast.Module
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)
    functions: dict[str, ast.FunctionDef] = field(default_factory=dict)
    imports: dict[str, tuple[str, str]] = field(default_factory=dict)
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
                elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    for alias in node.names:
                        mod.imports[alias.asname or alias.name] = (node.module, alias.name)
                elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                    mod.constants[node.targets[0].id] = node.value
            self._mods[path] = mod
        return self._mods[path]

    def _module_file(self, dotted: str) -> Path | None:
        rel = Path(*dotted.split(".")).with_suffix(".py")
        for base in (self.repo, self.repo / "python", *sorted(p for p in self.repo.glob("*") if p.is_dir())):
            if (base / rel).is_file():
                return base / rel
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
                if orig in other.classes or orig in other.functions:
                    return self.resolve(other, orig)
        return None

    def find_method(self, mod: Module, cls_name: str, method: str, skip_first: bool = False):
        """(module, FunctionDef) of `method` on class `cls_name` or its bases, depth first."""
        found = self.resolve(mod, cls_name)
        if found is None or not isinstance(found[1], ast.ClassDef):
            return None
        cmod, cls = found
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


@dataclass
class LoopState:
    module: Module
    loop: ast.For
    env: dict
    name_var: str
    cls: str
    loop_class: str = ""
    """The class whose load_weights body holds the loop (the model class itself or a base)."""


class Interp:
    """Evaluates statements of one load_weights for one checkpoint name at a time."""

    def __init__(self, index: ModuleIndex, config: dict, params: set[str] | None):
        self.index = index
        self.config = Config(config)
        self.params = ParamsDict(params)
        self.assumed_false: set[int] = set()
        self.trace = Trace()
        self._part_cache: dict = {}

    # ---- set-up: run the function up to its `for name, w in weights:` loop
    def prepare(self, mod: Module, func: ast.FunctionDef, cls: str, kwargs: dict | None = None) -> LoopState:
        env = self._bind(func, [SelfObj(self.config, cls), "<weights>"], kwargs or {}, mod)
        for stmt in func.body:
            if isinstance(stmt, ast.For) and _iterates_weights(stmt):
                return LoopState(mod, stmt, env, _name_target(stmt), cls, self.index.class_of(mod, func) or cls)
            delegated = self._delegation(stmt, mod, cls, env)
            if delegated is not None:
                return delegated
            self.exec_stmts([stmt], env, mod, cls)
        raise SimError(f"{mod.path}: {func.name} has no `for name, weight in weights:` loop")

    def _delegation(self, stmt, mod, cls, env):
        """`super().load_weights(weights, is_nextn=True)`: prepare the base's loop with those arguments."""
        call = stmt.value if isinstance(stmt, (ast.Expr, ast.Return)) else None
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                and call.func.attr == "load_weights"):
            return None
        owner = call.func.value
        if not (isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "super"):
            raise SimError(f"{mod.path}:{stmt.lineno}: load_weights hands the names to "
                           f"`{ast.unparse(call.func)}` (per-module dispatch over the built model tree, as vLLM's "
                           f"AutoWeightsLoader does); a static replay needs the model class built")
        kwargs = {k.arg: self.eval(k.value, env, mod, cls) for k in call.keywords if k.arg}
        found = self.index.find_method(mod, cls, "load_weights", skip_first=True)
        if found is None:
            raise SimError(f"{mod.path}: {cls}.load_weights delegates to a base class not found in the repo")
        bmod, bfunc = found
        return self.prepare(bmod, bfunc, cls, kwargs)

    def run_body(self, state: LoopState, name: str) -> Trace:
        self.trace = Trace(target=name)
        env = dict(state.env)
        env[state.name_var] = name
        self._name_var = state.name_var
        try:
            self.exec_stmts(state.loop.body, env, state.module, state.cls)
        except _Continue:
            pass
        except _KeyError as exc:
            self.trace.status, self.trace.target, self.trace.line = "keyerror", exc.key, exc.line
            return self.trace
        self.trace.finish()
        return self.trace

    # ---- statements
    def exec_stmts(self, stmts, env, mod, cls, depth=0):
        for stmt in stmts:
            self.exec_stmt(stmt, env, mod, cls, depth)

    def exec_stmt(self, s, env, mod, cls, depth):
        if isinstance(s, ast.Assign):
            value = self.eval(s.value, env, mod, cls, depth)
            for target in s.targets:
                self._assign(target, value, env, s.lineno)
        elif isinstance(s, (ast.AnnAssign, ast.AugAssign)) and isinstance(s.target, ast.Name) and s.value:
            value = self.eval(s.value, env, mod, cls, depth)
            if isinstance(s, ast.AugAssign):
                value = binop(s.op, env.get(s.target.id, UNKNOWN), value)
            self._assign(s.target, value, env, s.lineno)
        elif isinstance(s, ast.Expr):
            self.eval(s.value, env, mod, cls, depth)
        elif isinstance(s, ast.If):
            branch = s.body if self.truth(s.test, env, mod, cls, depth) else s.orelse
            self.exec_stmts(branch, env, mod, cls, depth)
        elif isinstance(s, ast.For):
            self._for(s, env, mod, cls, depth)
        elif isinstance(s, (ast.Try, ast.With)):
            self.exec_stmts(s.body, env, mod, cls, depth)
        elif isinstance(s, ast.Continue):
            self.trace.skip_line = s.lineno
            raise _Continue()
        elif isinstance(s, ast.Break):
            raise _Break()
        elif isinstance(s, ast.Return):
            raise _Return(self.eval(s.value, env, mod, cls, depth) if s.value else None)
        elif isinstance(s, ast.Raise):
            self.trace.raised = s.lineno
            raise _Continue()
        elif isinstance(s, ast.FunctionDef):
            env[s.name] = Function(mod, s, cls)
        # pass, assert, import, global, while (never in a per-name path we model): nothing to do

    def _assign(self, target, value, env, line):
        if isinstance(target, ast.Name):
            if target.id == getattr(self, "_name_var", None) and env.get(target.id) != value:
                self.trace.rename(line, env.get(target.id), value)
            env[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            items = list(value) if isinstance(value, (list, tuple)) else [UNKNOWN] * len(target.elts)
            for t, v in zip(target.elts, items):
                self._assign(t, v, env, line)

    def _for(self, s: ast.For, env, mod, cls, depth):
        items = self.eval(s.iter, env, mod, cls, depth)
        if isinstance(items, Unknown):
            self.assumed_false.add(s.lineno)
            items = []
        items = self._prefilter(s, list(items), env)
        try:
            for item in items:
                self._assign(s.target, item, env, s.lineno)
                try:
                    self.exec_stmts(s.body, env, mod, cls, depth)
                except _Continue:
                    continue
        except _Break:
            return
        self.exec_stmts(s.orelse, env, mod, cls, depth)

    def _prefilter(self, s: ast.For, items: list, env) -> list:
        """Items a leading `if <part> not in name: continue` would skip, dropped before interpreting."""
        body, pos = s.body, None
        first = body[0] if body else None
        names = _target_names(s.target)
        if isinstance(first, ast.Assign) and isinstance(first.value, ast.Name) and first.value.id in names:
            names = _target_names(first.targets[0]) if len(body) > 1 else []
            first = body[1] if len(body) > 1 else None
        if not (isinstance(first, ast.If) and first.body and isinstance(first.body[0], ast.Continue)
                and isinstance(first.test, ast.Compare) and isinstance(first.test.ops[0], ast.NotIn)
                and isinstance(first.test.left, ast.Name) and first.test.left.id in names
                and isinstance(first.test.comparators[0], ast.Name)):
            return items
        pos, name = names.index(first.test.left.id), env.get(first.test.comparators[0].id)
        if not isinstance(name, str):
            return items
        by_part = self._parts(items, pos)
        if by_part is None:
            return items
        keep = {k for k in by_part if k in name}
        return [item for item in items if item[pos] in keep]

    def _parts(self, items: list, pos: int) -> dict | None:
        """{item[pos]: True} for a list of tuples whose item `pos` is a string; cached per list."""
        key = (id(items[0]) if items else 0, len(items), pos)
        if key not in self._part_cache:
            ok = all(isinstance(i, (tuple, list)) and len(i) > pos and isinstance(i[pos], str) for i in items)
            self._part_cache[key] = dict.fromkeys(i[pos] for i in items) if ok else None
        return self._part_cache[key]

    def truth(self, test, env, mod, cls, depth=0) -> bool:
        value = self.eval(test, env, mod, cls, depth)
        if isinstance(value, Unknown):
            self.assumed_false.add(test.lineno)
            return False
        return bool(value)

    # ---- expressions
    def eval(self, e, env, mod, cls, depth=0):
        return eval_expr(self, e, env, mod, cls, depth)

    def lookup(self, key, line):
        """`params_dict[key]`: a KeyError when the model registers no such parameter."""
        if isinstance(key, str) and not self.params.has(key):
            raise _KeyError(key, line)
        self.trace.lookup(key, line)
        return UNKNOWN

    def call_function(self, fn: Function, args: list, kwargs: dict, depth: int):
        if depth > MAX_DEPTH:
            return UNKNOWN
        env = self._bind(fn.node, args, kwargs, fn.module)
        try:
            self.exec_stmts(fn.node.body, env, fn.module, fn.cls, depth + 1)
        except _Return as ret:
            return ret.value
        except (_Continue, _Break):
            return UNKNOWN
        return None

    def _bind(self, func: ast.FunctionDef, args: list, kwargs: dict, mod: Module) -> dict:
        params = func.args.posonlyargs + func.args.args
        defaults = [None] * (len(params) - len(func.args.defaults)) + list(func.args.defaults)
        env: dict = {}
        for i, (p, d) in enumerate(zip(params, defaults)):
            if i < len(args):
                env[p.arg] = args[i]
            elif p.arg in kwargs:
                env[p.arg] = kwargs[p.arg]
            else:
                env[p.arg] = self.eval(d, {}, mod, None) if d is not None else UNKNOWN
        for p, d in zip(func.args.kwonlyargs, func.args.kw_defaults):
            env[p.arg] = kwargs.get(p.arg, self.eval(d, {}, mod, None) if d is not None else UNKNOWN)
        if "params_dict" not in env:
            env["params_dict"] = self.params
        return env


class _KeyError(Exception):
    def __init__(self, key, line):
        self.key, self.line = key, line


def _iterates_weights(loop: ast.For) -> bool:
    return (isinstance(loop.target, ast.Tuple) and bool(loop.target.elts)
            and isinstance(loop.target.elts[0], ast.Name) and isinstance(loop.iter, ast.Name))


def _name_target(loop: ast.For) -> str:
    return loop.target.elts[0].id


def _target_names(target) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [t.id if isinstance(t, ast.Name) else "" for t in target.elts]
    return []


# re-exported for callers that only need the value helpers
__all__ += ["BUILTINS", "call_method", "compare_op", "expert_params_mapping"]
