"""Values the load_weights interpreter works with, and the facts it knows about framework helpers."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias

from tools.weights.sim_index import Module

if TYPE_CHECKING:
    from tools.weights.module_tree import ModuleTree

Value: TypeAlias = Any
"""What a model file's expression evaluates to: a plain Python value (None, a number, a string, a
container, a range, a slice), a builtin, or one of the interpreter's own values below (Unknown, Config,
SelfObj, ParamsDict, Function, Instance, ClassRef). Any rather than a union on purpose: the interpreter
applies Python's own operators to whatever the model file combines and answers UNKNOWN on the TypeError,
as the file would fail at run time."""

Env: TypeAlias = dict[str, Value]
"""The variables of one running function (or the loop body): name -> value."""


class SimError(ValueError):
    """The model file cannot be simulated (no load_weights loop, a base class outside the repo)."""


class Unknown:
    """A value the static reading cannot know (a flag set at run time, a tensor)."""

    _instance: Unknown | None = None

    def __new__(cls, *args: object) -> Unknown:  # noqa: PYI034 - Unknown() is the one shared UNKNOWN
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

    def __init__(self, obj: Value, attr: str) -> None:
        self.obj, self.attr = obj, attr


class Config:
    """config.json with attribute access, the way a transformers PretrainedConfig reads."""

    def __init__(self, data: dict[str, Value]) -> None:
        self.data = data

    def get(self, key: str) -> Value:
        if key in self.data:
            value = self.data[key]
            return Config(value) if isinstance(value, dict) else value
        return UNKNOWN

    def has(self, key: Value) -> bool:
        return key in self.data


@dataclass
class SelfObj:
    """`self` of the model: its config is known, everything else is decided at run time."""

    config: Config
    cls: str


class ParamsDict:
    """`params_dict`: the registered parameter names, or None when unknown (every lookup succeeds, unless
    a module tree read from the model file's `__init__`s says the name's module does not exist)."""

    def __init__(self, names: set[str] | None, tree: ModuleTree | None = None) -> None:
        self.names = names
        self.tree = tree

    def has(self, key: Value) -> bool:
        if self.names is None:
            return self.tree is None or not isinstance(key, str) or self.tree.may_hold(key)
        return key in self.names


@dataclass
class Function:
    """A function or method of the repository, interpreted when called."""

    module: Module
    node: ast.FunctionDef
    cls: str | None


@dataclass
class Trace:
    """What happened to one name: renames, lookups, the decisive line."""

    target: Value = None
    status: str = "skipped"
    rewrites: list[tuple[int, str, str]] = field(default_factory=list)
    line: int | None = None
    looked_up: bool = False
    missing: tuple[str, int] | None = None
    raised: int | None = None
    skip_line: int | None = None

    def rename(self, line: int, old: Value, new: Value) -> None:
        if isinstance(old, str) and isinstance(new, str):
            self.rewrites.append((line, old, new))
        self.target = new

    def lookup(self, key: Value, line: int) -> None:
        self.looked_up, self.target, self.line = True, key, line

    def membership(self, key: Value, present: bool, line: int) -> None:
        if not present and isinstance(key, str):
            self.missing = (key, line)

    def finish(self) -> None:
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


def expert_params_mapping(
    ckpt_gate_proj_name: Value = "gate_proj",
    ckpt_down_proj_name: Value = "down_proj",
    ckpt_up_proj_name: Value = "up_proj",
    num_experts: Value = 0,
    num_redundant_experts: Value = 0,
    routed_experts_prefix: Value = "",
    **_: Value,
) -> list[tuple[str, str, int, str]] | Unknown:
    """FusedMoE.make_expert_params_mapping as sglang and vLLM build it: (param, weight, expert, shard)."""
    if not isinstance(num_experts, int):
        return UNKNOWN
    out = []
    extra = num_redundant_experts if isinstance(num_redundant_experts, int) else 0
    for expert in range(num_experts + extra):
        for shard, weight in (
            ("w1", ckpt_gate_proj_name),
            ("w2", ckpt_down_proj_name),
            ("w3", ckpt_up_proj_name),
        ):
            # vLLM registers the stacked experts one module down (`experts.routed_experts.w13_weight`)
            sub = f"{routed_experts_prefix}." if routed_experts_prefix else ""
            param = (
                f"experts.{sub}w13_"
                if weight in (ckpt_gate_proj_name, ckpt_up_proj_name)
                else f"experts.{sub}w2_"
            )
            out.append((param, f"experts.{expert}.{weight}.", expert, shard))
    return out


@dataclass
class Instance:
    """An object of a repository class built in the loader (a config dataclass): its keyword arguments."""

    cls: str
    kwargs: Env


@dataclass
class ClassRef:
    """A repository class named in the loader; calling it builds an Instance."""

    name: str


def match_pattern(pattern: ast.pattern, subject: Value) -> Env | None:
    """Bindings when `pattern` matches `subject` (class patterns with keywords, `_`, names), else None."""
    if isinstance(pattern, ast.MatchAs):
        if pattern.pattern is not None:
            inner = match_pattern(pattern.pattern, subject)
            return None if inner is None else {**inner, **({pattern.name: subject} if pattern.name else {})}
        return {pattern.name: subject} if pattern.name else {}
    if isinstance(pattern, ast.MatchClass) and isinstance(subject, Instance):
        name = pattern.cls.id if isinstance(pattern.cls, ast.Name) else getattr(pattern.cls, "attr", "")
        if name != subject.cls or pattern.patterns:
            return None
        bound: Env = {}
        for key, sub in zip(pattern.kwd_attrs, pattern.kwd_patterns, strict=True):
            inner = match_pattern(sub, subject.kwargs.get(key, UNKNOWN))
            if inner is None:
                return None
            bound.update(inner)
        return bound
    return None
