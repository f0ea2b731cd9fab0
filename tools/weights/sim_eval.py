"""The interpreter behind tools.weights.load_sim: evaluates a load_weights body's AST on one name.

Values are plain Python values, the model config (attribute access over config.json), `self`
(whose `config` is that config; other attributes are Unknown), the registered parameter set and
Unknown. Unknown conditions count as false and their lines are recorded by the caller.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from tools.weights.sim_expr import eval_expr
from tools.weights.sim_index import Module, ModuleIndex
from tools.weights.sim_ops import BUILTINS, binop, call_method, compare_op
from tools.weights.sim_setup import LoopState
from tools.weights.sim_values import (
    UNKNOWN,
    Config,
    Env,
    Function,
    ParamsDict,
    SimError,
    Trace,
    Unknown,
    Value,
    expert_params_mapping,
    match_pattern,
)

if TYPE_CHECKING:
    from tools.weights.module_tree import ModuleTree

__all__ = ["Interp", "ModuleIndex", "SimError", "Unknown"]
MAX_DEPTH = 24


class _Continue(Exception):
    pass


class _Break(Exception):
    pass


class _Return(Exception):
    def __init__(self, value: Value) -> None:
        self.value = value


class Interp:
    """Evaluates statements of one load_weights for one checkpoint name at a time."""

    def __init__(
        self, index: ModuleIndex, config: Env, params: set[str] | None, tree: ModuleTree | None = None
    ) -> None:
        self.index = index
        self.config = Config(config)
        self.params = ParamsDict(params, tree)
        self.assumed_false: set[int] = set()
        self.trace = Trace()
        self.home: Module | None = None
        """The model file (where the model class itself is defined), set by the first prepare."""
        self._part_cache: dict[tuple[int, int, int], dict[str, None] | None] = {}
        self.yields: list[list[Value]] = []
        """One list per generator function being run: what its `yield`s produced."""

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
    def exec_stmts(
        self, stmts: list[ast.stmt], env: Env, mod: Module, cls: str | None, depth: int = 0
    ) -> None:
        for stmt in stmts:
            self.exec_stmt(stmt, env, mod, cls, depth)

    def exec_stmt(self, s: ast.stmt, env: Env, mod: Module, cls: str | None, depth: int) -> None:
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
        elif isinstance(s, ast.Match):
            self._match(s, env, mod, cls, depth)
        # pass, assert, import, global, while (never in a per-name path we model): nothing to do

    def _match(self, s: ast.Match, env: Env, mod: Module, cls: str | None, depth: int) -> None:
        """`match conf: case EnabledConfig(prefix=p): ...` over a repository dataclass instance."""
        subject = self.eval(s.subject, env, mod, cls, depth)
        for case in s.cases:
            bound = match_pattern(case.pattern, subject)
            if bound is None:
                continue
            env.update(bound)
            if case.guard is None or self.truth(case.guard, env, mod, cls, depth):
                self.exec_stmts(case.body, env, mod, cls, depth)
                return
        if isinstance(subject, Unknown):
            self.assumed_false.add(s.lineno)

    def _assign(self, target: ast.expr, value: Value, env: Env, line: int) -> None:
        if isinstance(target, ast.Subscript):  # `cached[name] = w`: state a loop keeps across names
            obj = env.get(target.value.id) if isinstance(target.value, ast.Name) else None
            sl = target.slice
            key = env.get(sl.id) if isinstance(sl, ast.Name) else getattr(sl, "value", None)
            if isinstance(obj, dict) and isinstance(key, str):
                obj[key] = value
            return
        if isinstance(target, ast.Name):
            if target.id == getattr(self, "_name_var", None) and env.get(target.id) != value:
                self.trace.rename(line, env.get(target.id), value)
            env[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            items = list(value) if isinstance(value, (list, tuple)) else [UNKNOWN] * len(target.elts)
            for t, v in zip(target.elts, items, strict=False):
                self._assign(t, v, env, line)

    def _for(self, s: ast.For, env: Env, mod: Module, cls: str | None, depth: int) -> None:
        items = self.eval(s.iter, env, mod, cls, depth)
        if not isinstance(items, (list, tuple, range, str, dict, set)):  # unknown, or over params_dict
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

    def _prefilter(self, s: ast.For, items: list[Value], env: Env) -> list[Value]:
        """Items a leading `if <part> not in name: continue` would skip, dropped before interpreting."""
        body, pos = s.body, None
        first = body[0] if body else None
        names = _target_names(s.target)
        if isinstance(first, ast.Assign) and isinstance(first.value, ast.Name) and first.value.id in names:
            names = _target_names(first.targets[0]) if len(body) > 1 else []
            first = body[1] if len(body) > 1 else None
        if not (
            isinstance(first, ast.If)
            and first.body
            and isinstance(first.body[0], ast.Continue)
            and isinstance(first.test, ast.Compare)
            and isinstance(first.test.ops[0], ast.NotIn)
            and isinstance(first.test.left, ast.Name)
            and first.test.left.id in names
            and isinstance(first.test.comparators[0], ast.Name)
        ):
            return items
        pos, name = names.index(first.test.left.id), env.get(first.test.comparators[0].id)
        if not isinstance(name, str):
            return items
        by_part = self._parts(items, pos)
        if by_part is None:
            return items
        keep = {k for k in by_part if k in name}
        return [item for item in items if item[pos] in keep]

    def _parts(self, items: list[Value], pos: int) -> dict[str, None] | None:
        """{item[pos]: True} for a list of tuples whose item `pos` is a string; cached per list."""
        key = (id(items[0]) if items else 0, len(items), pos)
        if key not in self._part_cache:
            ok = all(isinstance(i, (tuple, list)) and len(i) > pos and isinstance(i[pos], str) for i in items)
            self._part_cache[key] = dict.fromkeys(i[pos] for i in items) if ok else None
        return self._part_cache[key]

    def truth(self, test: ast.expr, env: Env, mod: Module, cls: str | None, depth: int = 0) -> bool:
        value = self.eval(test, env, mod, cls, depth)
        if isinstance(value, Unknown):
            self.assumed_false.add(test.lineno)
            return False
        return bool(value)

    # ---- expressions
    def eval(self, e: ast.expr | None, env: Env, mod: Module, cls: str | None, depth: int = 0) -> Value:
        return eval_expr(self, e, env, mod, cls, depth)

    def lookup(self, key: Value, line: int) -> Value:
        """`params_dict[key]`: a KeyError when the model registers no such parameter."""
        if isinstance(key, str) and not self.params.has(key):
            raise _KeyError(key, line)
        self.trace.lookup(key, line)
        return UNKNOWN

    def call_function(self, fn: Function, args: list[Value], kwargs: Env, depth: int) -> Value:
        if depth > MAX_DEPTH:
            return UNKNOWN
        env = self._bind(fn.node, args, kwargs, fn.module)
        generator = _is_generator(fn.node)
        if generator:  # a weights-stream filter: run it on the one name and collect what it yields
            self.yields.append([])
        try:
            self.exec_stmts(fn.node.body, env, fn.module, fn.cls, depth + 1)
        except _Return as ret:
            return self.yields.pop() if generator else ret.value
        except (_Continue, _Break):
            if generator:
                self.yields.pop()
            return UNKNOWN
        return self.yields.pop() if generator else None

    def _bind(self, func: ast.FunctionDef, args: list[Value], kwargs: Env, mod: Module) -> Env:
        params = func.args.posonlyargs + func.args.args
        defaults: list[ast.expr | None] = [None] * (len(params) - len(func.args.defaults))
        defaults += func.args.defaults
        env: Env = {}
        for i, (p, d) in enumerate(zip(params, defaults, strict=True)):
            if i < len(args):
                env[p.arg] = args[i]
            elif p.arg in kwargs:
                env[p.arg] = kwargs[p.arg]
            else:
                env[p.arg] = self.eval(d, {}, mod, None) if d is not None else UNKNOWN
        for p, d in zip(func.args.kwonlyargs, func.args.kw_defaults, strict=True):
            env[p.arg] = kwargs.get(p.arg, self.eval(d, {}, mod, None) if d is not None else UNKNOWN)
        if "params_dict" not in env:
            env["params_dict"] = self.params
        return env


class _KeyError(Exception):
    def __init__(self, key: str, line: int) -> None:
        self.key, self.line = key, line


def _is_generator(func: ast.FunctionDef) -> bool:
    """A `yield` in the function itself (not in a nested def)."""
    todo: list[ast.AST] = list(func.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            return True
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(node))
    return False


def _target_names(target: ast.expr) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [t.id if isinstance(t, ast.Name) else "" for t in target.elts]
    return []


# re-exported for callers that only need the value helpers
__all__ += ["BUILTINS", "call_method", "compare_op", "expert_params_mapping"]
