"""Expression evaluation for the load_weights interpreter (tools.weights.sim_eval)."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from tools.weights.sim_index import Module
from tools.weights.sim_ops import BUILTINS, binop, call_method, compare_op
from tools.weights.sim_values import (
    UNKNOWN,
    BoundAttr,
    ClassRef,
    Config,
    Env,
    Function,
    Instance,
    ParamsDict,
    SelfObj,
    Unknown,
    Value,
    expert_params_mapping,
)

if TYPE_CHECKING:
    from tools.weights.sim_eval import Interp

EXPERT_MAPPING_FUNCS = ("make_expert_params_mapping", "fused_moe_make_expert_params_mapping")
LOADER_CALLS = ("weight_loader", "default_weight_loader")
ITERABLE = (list, tuple, range, str, dict, set)


def eval_expr(
    it: Interp, e: ast.expr | None, env: Env, mod: Module, cls: str | None, depth: int = 0
) -> Value:
    """The value of expression `e`; UNKNOWN for anything a static reading cannot know."""
    if e is None:
        return None
    if isinstance(e, ast.Constant):
        return e.value
    if isinstance(e, ast.Name):
        return _name(it, e.id, env, mod, cls)
    if isinstance(e, ast.Attribute):
        return _attribute(it, eval_expr(it, e.value, env, mod, cls, depth), e.attr, e.lineno)
    if isinstance(e, ast.Subscript):
        return _subscript(it, e, env, mod, cls, depth)
    if isinstance(e, ast.Call):
        return _call(it, e, env, mod, cls, depth)
    if isinstance(e, ast.Compare):
        return _compare(it, e, env, mod, cls, depth)
    if isinstance(e, ast.BoolOp):
        return _boolop(it, e, env, mod, cls, depth)
    if isinstance(e, ast.UnaryOp):
        v = eval_expr(it, e.operand, env, mod, cls, depth)
        if isinstance(e.op, ast.Not) and _runtime_attr(v):
            it.assumed_false.add(e.lineno)  # `not self.fused_layers`: the optional feature is off
            return True
        if isinstance(v, Unknown):
            return UNKNOWN
        return (not v) if isinstance(e.op, ast.Not) else (-v if isinstance(e.op, ast.USub) else UNKNOWN)
    if isinstance(e, ast.BinOp):
        return binop(
            e.op, eval_expr(it, e.left, env, mod, cls, depth), eval_expr(it, e.right, env, mod, cls, depth)
        )
    if isinstance(e, ast.JoinedStr):
        parts = [eval_expr(it, v, env, mod, cls, depth) for v in e.values]
        return UNKNOWN if any(isinstance(p, Unknown) for p in parts) else "".join(str(p) for p in parts)
    if isinstance(e, ast.FormattedValue):
        v = eval_expr(it, e.value, env, mod, cls, depth)
        return UNKNOWN if isinstance(v, (Unknown, Config, SelfObj)) else v
    if isinstance(e, (ast.List, ast.Tuple, ast.Set)):
        items = [eval_expr(it, x, env, mod, cls, depth) for x in e.elts]
        return tuple(items) if isinstance(e, ast.Tuple) else items
    if isinstance(e, ast.Dict):
        return {
            eval_expr(it, k, env, mod, cls, depth): eval_expr(it, v, env, mod, cls, depth)
            for k, v in zip(e.keys, e.values, strict=True)
            if k is not None
        }
    if isinstance(e, ast.IfExp):
        branch = e.body if it.truth(e.test, env, mod, cls, depth) else e.orelse
        return eval_expr(it, branch, env, mod, cls, depth)
    if isinstance(e, ast.Slice):
        parts = [
            eval_expr(it, x, env, mod, cls, depth) if x is not None else None
            for x in (e.lower, e.upper, e.step)
        ]
        return UNKNOWN if any(isinstance(p, Unknown) for p in parts) else slice(*parts)
    if isinstance(e, (ast.ListComp, ast.GeneratorExp)):
        return _comprehension(it, e, env, mod, cls, depth)
    if isinstance(e, ast.NamedExpr) and isinstance(
        e.target, ast.Name
    ):  # `if not (n := getattr(config, ...))`
        env[e.target.id] = eval_expr(it, e.value, env, mod, cls, depth)
        return env[e.target.id]
    if isinstance(e, (ast.Yield, ast.YieldFrom)) and it.yields:
        value = eval_expr(it, e.value, env, mod, cls, depth)
        if isinstance(e, ast.Yield):
            it.yields[-1].append(value)
        elif isinstance(value, (list, tuple)):
            it.yields[-1].extend(value)
        return None
    return UNKNOWN


def _runtime_attr(value: Value) -> bool:
    """An attribute of the model set at run time (`self.fused_shared_expert_layers`), never a config value."""
    return isinstance(value, BoundAttr) and isinstance(value.obj, SelfObj)


def _name(it: Interp, name: str, env: Env, mod: Module, cls: str | None) -> Value:
    if name in env:
        return env[name]
    if name in mod.constants:
        value = eval_expr(it, mod.constants[name], {}, mod, None)
        if not isinstance(value, Unknown):
            return value
    found = it.index.resolve(mod, name) if mod is not None else None
    if found is not None and isinstance(found[1], ast.FunctionDef):
        return Function(found[0], found[1], None)
    if found is not None and isinstance(found[1], ast.ClassDef) and name not in BUILTINS:
        return ClassRef(name)
    return BUILTINS.get(name, UNKNOWN)


def _attribute(it: Interp, obj: Value, attr: str, line: int) -> Value:
    if isinstance(obj, SelfObj):
        if attr == "config":
            return obj.config
        if attr.startswith(("num_", "n_")):  # a count of optional extras (fused shared experts): off
            it.assumed_false.add(line)
            return 0
        return BoundAttr(obj, attr)
    if isinstance(obj, Config):
        return obj.get(attr)
    if isinstance(obj, Instance):
        return obj.kwargs.get(attr, UNKNOWN)
    return BoundAttr(obj, attr)  # resolved when called; any other use is unknown


def _subscript(it: Interp, e: ast.Subscript, env: Env, mod: Module, cls: str | None, depth: int) -> Value:
    obj = eval_expr(it, e.value, env, mod, cls, depth)
    key = eval_expr(it, e.slice, env, mod, cls, depth)
    if isinstance(obj, ParamsDict):
        return it.lookup(key, e.lineno)
    if isinstance(obj, Unknown) or isinstance(key, Unknown):
        return UNKNOWN
    try:
        return obj[key]
    except (TypeError, KeyError, IndexError):
        return UNKNOWN


def _call(it: Interp, e: ast.Call, env: Env, mod: Module, cls: str | None, depth: int) -> Value:
    func = e.func
    fname = func.attr if isinstance(func, ast.Attribute) else (func.id if isinstance(func, ast.Name) else "")
    args = [eval_expr(it, a, env, mod, cls, depth) for a in e.args if not isinstance(a, ast.Starred)]
    kwargs = {k.arg: eval_expr(it, k.value, env, mod, cls, depth) for k in e.keywords if k.arg}
    if fname == "named_parameters" or (fname == "dict" and args and isinstance(args[0], ParamsDict)):
        return it.params
    if fname in EXPERT_MAPPING_FUNCS:
        return expert_params_mapping(**{**_defaults(it, mod, fname), **kwargs})
    if fname in LOADER_CALLS or fname.endswith("weight_loader"):
        it.trace.looked_up = it.trace.looked_up or isinstance(it.trace.target, str)
        return None
    target = eval_expr(it, func, env, mod, cls, depth)
    if isinstance(target, ClassRef):
        return Instance(target.name, kwargs)
    if isinstance(target, Function):
        return it.call_function(target, args, kwargs, depth)
    if isinstance(target, BoundAttr):
        obj, attr = target.obj, target.attr
        if isinstance(obj, SelfObj):
            # the class is defined in the model file (`home`); a mixin's method runs from another module
            found = (it.index.find_method(mod, obj.cls, attr) if cls else None) or (
                it.index.find_method(it.home, obj.cls, attr) if it.home else None
            )
            if found is not None:
                return it.call_function(Function(found[0], found[1], obj.cls), [obj, *args], kwargs, depth)
            return UNKNOWN
        return call_method(obj, attr, args, kwargs)
    if callable(target):
        return target(*args, **kwargs)
    return UNKNOWN


def _defaults(it: Interp, mod: Module, fname: str) -> Env:
    """Keyword defaults of a repository function (vLLM's `routed_experts_prefix`), read from its signature."""
    found = it.index.resolve(mod, fname)
    if found is None or not isinstance(found[1], ast.FunctionDef):
        return {}
    args = found[1].args
    named = (args.posonlyargs + args.args)[-len(args.defaults) :] if args.defaults else []
    pairs = [*zip(named, args.defaults, strict=True), *zip(args.kwonlyargs, args.kw_defaults, strict=True)]
    return {a.arg: d.value for a, d in pairs if isinstance(d, ast.Constant)}


def _compare(it: Interp, e: ast.Compare, env: Env, mod: Module, cls: str | None, depth: int) -> Value:
    left = eval_expr(it, e.left, env, mod, cls, depth)
    result = True
    for op, right_node in zip(e.ops, e.comparators, strict=True):
        right = eval_expr(it, right_node, env, mod, cls, depth)
        value = compare_op(op, left, right)
        if isinstance(right, ParamsDict) and isinstance(value, bool):
            it.trace.membership(left, right.has(left), e.lineno)
        if isinstance(value, Unknown):
            return UNKNOWN
        result = result and value
        left = right
    return result


def _boolop(it: Interp, e: ast.BoolOp, env: Env, mod: Module, cls: str | None, depth: int) -> Value:
    is_and = isinstance(e.op, ast.And)
    saw_unknown = False
    for v in e.values:
        value = eval_expr(it, v, env, mod, cls, depth)
        if isinstance(value, Unknown):
            saw_unknown = True
            continue
        if is_and and not value:
            return value
        if not is_and and value:
            return value
    return UNKNOWN if saw_unknown else (value if e.values else None)


def _comprehension(
    it: Interp, e: ast.ListComp | ast.GeneratorExp, env: Env, mod: Module, cls: str | None, depth: int
) -> Value:
    if len(e.generators) != 1:
        return UNKNOWN
    gen = e.generators[0]
    items = eval_expr(it, gen.iter, env, mod, cls, depth)
    if not isinstance(items, ITERABLE) or not isinstance(gen.target, (ast.Name, ast.Tuple)):
        return UNKNOWN  # over params_dict or a run-time value: not known statically
    out: list[Value] = []
    local = dict(env)
    for item in items:
        _bind_target(gen.target, item, local)
        if all(it.truth(c, local, mod, cls, depth) for c in gen.ifs):
            out.append(eval_expr(it, e.elt, local, mod, cls, depth))
    return out


def _bind_target(target: ast.expr, item: Value, local: Env) -> None:
    if isinstance(target, ast.Name):
        local[target.id] = item
    elif isinstance(target, ast.Tuple):
        parts = list(item) if isinstance(item, (list, tuple)) else [UNKNOWN] * len(target.elts)
        for t, v in zip(target.elts, parts, strict=False):
            _bind_target(t, v, local)
