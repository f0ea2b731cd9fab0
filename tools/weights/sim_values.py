"""Values the load_weights interpreter works with, and the facts it knows about framework helpers."""
from __future__ import annotations

import ast
import operator
from dataclasses import dataclass, field


class SimError(ValueError):
    """The model file cannot be simulated (no load_weights loop, a base class outside the repo)."""


class Unknown:
    """A value the static reading cannot know (a flag set at run time, a tensor)."""

    _instance = None

    def __new__(cls, *args):
        if cls is not Unknown:
            return super().__new__(cls)
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "<unknown>"


UNKNOWN = Unknown()


class BoundAttr(Unknown):
    """`obj.attr` not yet called: a method when called, otherwise a value known only at run time."""

    def __init__(self, obj, attr: str):
        self.obj, self.attr = obj, attr


class Config:
    """config.json with attribute access, the way a transformers PretrainedConfig reads."""

    def __init__(self, data: dict):
        self.data = data

    def get(self, key):
        if key in self.data:
            value = self.data[key]
            return Config(value) if isinstance(value, dict) else value
        return UNKNOWN

    def has(self, key) -> bool:
        return key in self.data


@dataclass
class SelfObj:
    """`self` of the model: its config is known, everything else is decided at run time."""

    config: Config
    cls: str


class ParamsDict:
    """`params_dict`: the registered parameter names, or None when unknown (every lookup succeeds)."""

    def __init__(self, names: set[str] | None):
        self.names = names

    def has(self, key) -> bool:
        return self.names is None or key in self.names


@dataclass
class Function:
    """A function or method of the repository, interpreted when called."""

    module: object
    node: ast.FunctionDef
    cls: str | None


@dataclass
class Trace:
    """What happened to one name: renames, lookups, the decisive line."""

    target: object = None
    status: str = "skipped"
    rewrites: list = field(default_factory=list)
    line: int | None = None
    looked_up: bool = False
    missing: tuple | None = None
    raised: int | None = None
    skip_line: int | None = None

    def rename(self, line, old, new):
        if isinstance(old, str) and isinstance(new, str):
            self.rewrites.append((line, old, new))
        self.target = new

    def lookup(self, key, line):
        self.looked_up, self.target, self.line = True, key, line

    def membership(self, key, present: bool, line: int):
        if not present and isinstance(key, str):
            self.missing = (key, line)

    def finish(self):
        if self.looked_up:
            self.status = "loaded"
        elif self.missing is not None:
            self.status, (self.target, self.line) = "dropped", self.missing
        elif isinstance(self.target, Unknown):
            self.status = "unknown"
        else:
            self.status, self.line = "skipped", self.skip_line
        if not isinstance(self.target, str):
            self.target = None


def expert_params_mapping(ckpt_gate_proj_name="gate_proj", ckpt_down_proj_name="down_proj",
                          ckpt_up_proj_name="up_proj", num_experts=0, num_redundant_experts=0, **_):
    """FusedMoE.make_expert_params_mapping as sglang and vLLM build it: (param, weight, expert, shard)."""
    if not isinstance(num_experts, int):
        return UNKNOWN
    out = []
    extra = num_redundant_experts if isinstance(num_redundant_experts, int) else 0
    for expert in range(num_experts + extra):
        for shard, weight in (("w1", ckpt_gate_proj_name), ("w2", ckpt_down_proj_name), ("w3", ckpt_up_proj_name)):
            param = "experts.w13_" if weight in (ckpt_gate_proj_name, ckpt_up_proj_name) else "experts.w2_"
            out.append((param, f"experts.{expert}.{weight}.", expert, shard))
    return out


_STR_METHODS = {"replace", "startswith", "endswith", "split", "rsplit", "join", "format", "removeprefix",
                "removesuffix", "strip", "rstrip", "lstrip", "count", "find", "lower", "upper", "partition",
                "rpartition", "isdigit"}


def call_method(obj, method: str, args: list, kwargs: dict):
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


def _hasattr(obj, name):
    if isinstance(obj, Config):
        return obj.has(name)
    if isinstance(obj, SelfObj):
        return True if name == "config" else UNKNOWN
    return UNKNOWN


def _getattr(obj, name, default=UNKNOWN):
    if isinstance(obj, Config):
        value = obj.get(name)
        return default if isinstance(value, Unknown) else value
    return UNKNOWN


def _safe(fn):
    def call(*args, **kwargs):
        if any(isinstance(a, (Unknown, Config, SelfObj, ParamsDict)) for a in args):
            return UNKNOWN
        try:
            return fn(*args, **kwargs)
        except (TypeError, ValueError, IndexError, KeyError):
            return UNKNOWN
    return call


BUILTINS = {
    "hasattr": _hasattr, "getattr": _getattr, "len": _safe(len), "int": _safe(int), "str": _safe(str),
    "range": _safe(range), "list": _safe(list), "tuple": _safe(tuple), "set": _safe(set), "any": _safe(any),
    "all": _safe(all), "min": _safe(min), "max": _safe(max), "sorted": _safe(sorted), "bool": _safe(bool),
    "enumerate": _safe(lambda x: list(enumerate(x))), "zip": _safe(lambda *x: list(zip(*x))),
    "True": True, "False": False, "None": None,
}

_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Mod: operator.mod,
           ast.FloorDiv: operator.floordiv}


def binop(op, a, b):
    if isinstance(a, Unknown) or isinstance(b, Unknown) or type(op) not in _BINOPS:
        return UNKNOWN
    try:
        return _BINOPS[type(op)](a, b)
    except (TypeError, ValueError, ZeroDivisionError):
        return UNKNOWN


def compare_op(op, a, b):
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
    ops = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
           ast.Gt: operator.gt, ast.GtE: operator.ge, ast.In: lambda x, y: x in y,
           ast.NotIn: lambda x, y: x not in y}
    try:
        return ops[type(op)](a, b)
    except (TypeError, KeyError):
        return UNKNOWN
