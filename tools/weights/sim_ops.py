"""Operations on the load_weights interpreter's values: builtins, method calls and operators, each
answering Unknown when a static reading cannot know the result."""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable

from tools.weights.sim_values import UNKNOWN, Config, Env, ParamsDict, SelfObj, Unknown, Value

_STR_METHODS = {
    "replace",
    "startswith",
    "endswith",
    "split",
    "rsplit",
    "join",
    "format",
    "removeprefix",
    "removesuffix",
    "strip",
    "rstrip",
    "lstrip",
    "count",
    "find",
    "lower",
    "upper",
    "partition",
    "rpartition",
    "isdigit",
}


def call_method(obj: Value, method: str, args: list[Value], kwargs: Env) -> Value:
    """A method call on a known value (str, list, dict, config); Unknown when not modelled."""
    if any(isinstance(a, Unknown) for a in args):
        return UNKNOWN
    if isinstance(obj, str) and method in _STR_METHODS:
        return getattr(obj, method)(*args, **kwargs)
    if isinstance(obj, list) and method in ("append", "extend", "index", "count"):
        return getattr(obj, method)(*args)
    if isinstance(obj, dict) and method in ("get", "keys", "values", "items"):
        return getattr(obj, method)(*args)
    if isinstance(obj, ParamsDict) and method == "keys":
        return obj
    if isinstance(obj, Config) and method == "get":
        value = obj.get(args[0])
        return (args[1] if len(args) > 1 else None) if isinstance(value, Unknown) else value
    return UNKNOWN


def _hasattr(obj: Value, name: str) -> Value:
    if isinstance(obj, Config):
        return obj.has(name)
    if isinstance(obj, SelfObj):
        return True if name == "config" else UNKNOWN
    return UNKNOWN


def _getattr(obj: Value, name: str, default: Value = UNKNOWN) -> Value:
    if isinstance(obj, Config):
        value = obj.get(name)
        return default if isinstance(value, Unknown) else value
    return UNKNOWN


def _safe(fn: Callable[..., Value]) -> Callable[..., Value]:
    """`fn` on known plain values; UNKNOWN when an argument is not one or the call fails."""

    def call(*args: Value, **kwargs: Value) -> Value:
        if any(isinstance(a, (Unknown, Config, SelfObj, ParamsDict)) for a in args):
            return UNKNOWN
        try:
            return fn(*args, **kwargs)
        except (TypeError, ValueError, IndexError, KeyError):
            return UNKNOWN

    return call


BUILTINS: dict[str, Value] = {
    "hasattr": _hasattr,
    "getattr": _getattr,
    "len": _safe(len),
    "int": _safe(int),
    "str": _safe(str),
    "range": _safe(range),
    "list": _safe(list),
    "tuple": _safe(tuple),
    "set": _safe(set),
    "any": _safe(any),
    "all": _safe(all),
    "min": _safe(min),
    "max": _safe(max),
    "sorted": _safe(sorted),
    "bool": _safe(bool),
    "enumerate": _safe(lambda x: list(enumerate(x))),
    "zip": _safe(lambda *x: list(zip(*x, strict=False))),
    "True": True,
    "False": False,
    "None": None,
}

_BINOPS: dict[type[ast.operator], Callable[[Value, Value], Value]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Mod: operator.mod,
    ast.FloorDiv: operator.floordiv,
}


def binop(op: ast.operator, a: Value, b: Value) -> Value:
    if isinstance(a, Unknown) or isinstance(b, Unknown) or type(op) not in _BINOPS:
        return UNKNOWN
    try:
        return _BINOPS[type(op)](a, b)
    except (TypeError, ValueError, ZeroDivisionError):
        return UNKNOWN


def compare_op(op: ast.cmpop, a: Value, b: Value) -> Value:
    """One comparison; `in params_dict` answers from the registered names."""
    if isinstance(op, (ast.In, ast.NotIn)) and isinstance(b, ParamsDict):
        if isinstance(a, Unknown):
            return UNKNOWN
        present = b.has(a)
        return present if isinstance(op, ast.In) else not present
    if isinstance(op, (ast.Is, ast.IsNot)):
        if isinstance(a, Unknown) or isinstance(b, Unknown):
            return UNKNOWN
        return (a is b) if isinstance(op, ast.Is) else (a is not b)
    if isinstance(a, Unknown) or isinstance(b, Unknown):
        return UNKNOWN
    ops: dict[type[ast.cmpop], Callable[[Value, Value], Value]] = {
        ast.Eq: operator.eq,
        ast.NotEq: operator.ne,
        ast.Lt: operator.lt,
        ast.LtE: operator.le,
        ast.Gt: operator.gt,
        ast.GtE: operator.ge,
        ast.In: lambda x, y: x in y,
        ast.NotIn: lambda x, y: x not in y,
    }
    try:
        return ops[type(op)](a, b)
    except (TypeError, KeyError):
        return UNKNOWN
