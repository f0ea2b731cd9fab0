"""vLLM's AutoWeightsLoader replayed per checkpoint name, statically (the model file is parsed, never imported).

A model whose `load_weights` is `AutoWeightsLoader(self, ...).load_weights(weights, mapper=...)` loads by
walking its own module tree: the statements before it filter the weight stream (`skip_spec_layers`, ...),
the WeightsMapper renames (stacked q/k/v -> qkv_proj, prefixes, substrings), then each dotted part of
the name picks a child module; a child with its own `load_weights` takes the rest of the name, a
parameter takes the tensor, and anything else raises "There is no module or parameter named ...".
The module tree comes from the model built on the meta device (parameter names plus the modules that
define load_weights) or, without it, from the `__init__` assignments of the model file's classes
(tools.weights.module_tree).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from tools.weights.load_sim import LoaderSim, LoadOutcome, replay_names
from tools.weights.module_tree import ModuleTree
from tools.weights.sim_eval import Interp, ModuleIndex, SimError
from tools.weights.sim_index import Module
from tools.weights.sim_setup import LoopState
from tools.weights.sim_values import Env, SelfObj, Unknown, Value

# AutoWeightsLoader.REMOVE_UNUSED_ROTARY_EMBEDS_MAPPER: substrings whose tensors it drops on purpose
ROTARY_DROPPED = (
    "rotary_pos_emb.inv_freq",
    "rotary_emb.inv_freq",
    "rotary_emb.cos_cached",
    "rotary_emb.sin_cached",
)
MAPPER_FIELDS = ("orig_to_new_regex", "orig_to_new_substr", "orig_to_new_stacked", "orig_to_new_prefix")


@dataclass
class Mapper:
    """A WeightsMapper's name rules, applied in its order: regex, substr, stacked, prefix, suffix."""

    rules: dict[str, dict[str, Value]] = field(default_factory=dict)
    line: int | None = None

    def map(self, name: str) -> str | None:
        for pattern, new in self.rules.get("orig_to_new_regex", {}).items():
            if re.search(pattern, name):
                if new is None:
                    return None
                name = re.sub(pattern, new, name)
        for sub, new in self.rules.get("orig_to_new_substr", {}).items():
            if sub in name:
                if new is None:
                    return None
                name = name.replace(sub, new, 1)
        for sub, new in self.rules.get("orig_to_new_stacked", {}).items():
            if sub in name and isinstance(new, (tuple, list)):
                name = name.replace(sub, new[0], 1)
        for prefix, new in self.rules.get("orig_to_new_prefix", {}).items():
            if name.startswith(prefix):
                if new is None:
                    return None
                name = name.replace(prefix, new, 1)
        for suffix, new in self.rules.get("orig_to_new_suffix", {}).items():
            if name.endswith(suffix):
                if new is None:
                    return None
                name = new.join(name.rsplit(suffix, 1))
        return name


@dataclass
class AutoSite:
    """Where one class's load_weights hands the stream to AutoWeightsLoader."""

    module: Module
    func: ast.FunctionDef
    before: list[ast.stmt]
    """Statements ahead of the loader: stream filters, run on each name."""
    ctor: ast.Call
    load: ast.Call
    owner: str
    """The class whose body holds the load_weights (the model class or a base)."""


def _calls(node: ast.AST) -> list[ast.Call]:
    return [n for n in ast.walk(node) if isinstance(n, ast.Call)]


def _is_auto_ctor(call: ast.Call) -> bool:
    return isinstance(call.func, ast.Name) and call.func.id == "AutoWeightsLoader"


def auto_site(index: ModuleIndex, mod: Module, cls: str) -> AutoSite | None:
    """The AutoWeightsLoader use of `cls.load_weights` (here or in a base), or None for a hand-written loop."""
    found = index.find_method(mod, cls, "load_weights")
    if found is None:
        return None
    fmod, func = found
    ctor = next((c for c in _calls(func) if _is_auto_ctor(c)), None)
    if ctor is None:
        return None
    load = next(
        (
            c
            for c in _calls(func)
            if isinstance(c.func, ast.Attribute) and c.func.attr == "load_weights" and c is not ctor
        ),
        None,
    )
    if load is None:
        return None
    before = [s for s in func.body if s.lineno < ctor.lineno and not any(c is ctor for c in _calls(s))]
    return AutoSite(fmod, func, before, ctor, load, index.class_of(fmod, func) or cls)


class AutoLoaderSim:
    """A vLLM model class whose load_weights goes through AutoWeightsLoader, ready to replay on names."""

    def __init__(self, repo: Path, model_file: Path, class_name: str, config: Env, tree: ModuleTree) -> None:
        self.repo, self.config, self.tree = Path(repo), config, tree
        self.index = ModuleIndex(self.repo)
        self.module = self.index.load(model_file)
        self.class_name = class_name
        if auto_site(self.index, self.module, class_name) is None:
            raise SimError(f"{model_file}: {class_name}.load_weights does not use AutoWeightsLoader")
        self.interp = Interp(self.index, config, tree.params)
        self.delegated: dict[str, str] = {}
        """Module path -> class of framework layers (outside the model files) that load their own names;
        not replayed: a name reaching one counts as loaded into that module's parameters."""
        self._classic: dict[str, LoaderSim] = {}
        self.loop_state: LoopState | None = None

    @property
    def assumed_false(self) -> list[int]:
        return sorted(
            self.interp.assumed_false | {n for s in self._classic.values() for n in s.assumed_false}
        )

    def replay_all(self, names: Iterable[str]) -> list[LoadOutcome]:
        return replay_names(self.replay, names)

    def replay(self, name: str) -> LoadOutcome:
        """The outcome of AutoWeightsLoader (and every load_weights it reaches) for one checkpoint name."""
        out = LoadOutcome(name, "loaded", None)
        self._enter("", self.module, self.class_name, name, out)
        return out

    # ---- one module whose load_weights receives `name` (relative to `path`)
    def _enter(self, path: str, mod: Module, cls: str, name: str, out: LoadOutcome) -> None:
        site = auto_site(self.index, mod, cls)
        if site is None:
            self._classic_loop(path, mod, cls, name, out)
            return
        kept = self._filtered(site, cls, name)
        if kept is None:
            out.status, out.line = "skipped", site.before[-1].lineno if site.before else site.load.lineno
            return
        if kept != name:
            out.rewrites.append((site.before[-1].lineno, _join(path, name), _join(path, kept)))
        mapper = self._mapper(site, cls)
        mapped = None if any(s in kept for s in ROTARY_DROPPED) else mapper.map(kept)
        if mapped is None:
            out.status, out.line = "skipped", mapper.line or site.load.lineno
            return
        if mapped != kept:
            out.rewrites.append((mapper.line or site.load.lineno, _join(path, kept), _join(path, mapped)))
        self._walk(path, mapped, site, out)

    def _walk(self, path: str, rest: str, site: AutoSite, out: LoadOutcome) -> None:
        """AutoWeightsLoader._load_module: one dotted part at a time, from the module at `path`."""
        cur, parts = path, rest.split(".")
        for i, part in enumerate(parts):
            child = _join(cur, part)
            tail = ".".join(parts[i + 1 :])
            handler = self.tree.loaders.get(child)
            if handler is not None and tail:
                self._hand_over(child, handler, tail, out)
                return
            if self.tree.is_param(child) and not tail:
                out.status, out.target, out.line = "loaded", child, site.load.lineno
                return
            if self.tree.is_opaque(child) or not self.tree.known:  # a framework layer (or an unread tree)
                out.status, out.target, out.line = "loaded", _join(child, tail), site.load.lineno
                return
            if not self.tree.is_module(child):
                break
            cur = child
        full = _join(path, rest)
        if self._ignored(site, full):
            out.status, out.target, out.line = "skipped", full, site.load.lineno
        else:  # AutoWeightsLoader raises ValueError("There is no module or parameter named ...")
            out.status, out.target, out.line = "keyerror", full, site.load.lineno

    def _hand_over(self, child: str, handler: tuple[Path, str], tail: str, out: LoadOutcome) -> None:
        file, cls = handler
        if file.parent != self.module.path.parent:  # a framework layer (fused MoE runner ...)
            self.delegated[child] = cls
            out.status, out.target = "loaded", child
            return
        self._enter(child, self.index.load(file), cls, tail, out)

    def _classic_loop(self, path: str, mod: Module, cls: str, name: str, out: LoadOutcome) -> None:
        key = f"{path}:{cls}"
        if key not in self._classic:
            params = self.tree.params
            local = (
                None if params is None else {p[len(path) + 1 :] for p in params if p.startswith(path + ".")}
            )
            if not path:
                local = params
            self._classic[key] = LoaderSim(self.repo, mod.path, cls, self.config, local)
            if self.loop_state is None:
                self.loop_state = self._classic[key].loop_state
        inner = self._classic[key].replay(name)
        out.status, out.line = inner.status, inner.line
        out.target = _join(path, inner.target) if inner.target else None
        out.rewrites += [(line, _join(path, a), _join(path, b)) for line, a, b in inner.rewrites]

    # ---- the pieces of one AutoWeightsLoader call
    def _filtered(self, site: AutoSite, cls: str, name: str) -> str | None:
        """Run the stream filters ahead of the loader on a one-name stream; None when they drop it."""
        if not site.before:
            return name
        if len(site.func.args.args) < 2:
            return name
        weights_arg = site.func.args.args[1]
        env = self.interp._bind(
            site.func, [SelfObj(self.interp.config, cls), [(name, "<tensor>")]], {}, site.module
        )
        self.interp.exec_stmts(site.before, env, site.module, cls)
        stream = env.get(weights_arg.arg)
        if isinstance(stream, Unknown) or not isinstance(stream, (list, tuple)):
            self.interp.assumed_false.update(s.lineno for s in site.before)
            return name
        return stream[0][0] if stream else None

    def _mapper(self, site: AutoSite, cls: str) -> Mapper:
        expr = next((k.value for k in site.load.keywords if k.arg == "mapper"), None)
        call = self._mapper_call(site.module, cls, expr)
        if call is None:
            return Mapper()
        rules: dict[str, dict[str, Value]] = {}
        for kw in call.keywords:
            value = self.interp.eval(kw.value, {}, site.module, None)
            if kw.arg and isinstance(value, dict):
                rules[kw.arg] = value
        return Mapper(rules, call.lineno)

    def _mapper_call(self, mod: Module, cls: str, expr: ast.expr | None) -> ast.Call | None:
        """The `WeightsMapper(...)` call a `mapper=` argument names (inline, `self.attr` or `Class.attr`)."""
        if isinstance(expr, ast.Call):
            return expr
        if not isinstance(expr, ast.Attribute):
            return None
        owner = cls if isinstance(expr.value, ast.Name) and expr.value.id == "self" else None
        if owner is None and isinstance(expr.value, ast.Name):
            owner = expr.value.id
        found = self.index.resolve(mod, owner) if owner else None
        while found is not None and isinstance(found[1], ast.ClassDef):
            cmod, node = found[0], found[1]
            for stmt in node.body:
                if isinstance(stmt, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id == expr.attr for t in stmt.targets
                ):
                    return self._mapper_call(cmod, node.name, stmt.value)
            base = next((b.id for b in node.bases if isinstance(b, ast.Name)), None)
            found = self.index.resolve(cmod, base) if base else None
        return None

    def _ignored(self, site: AutoSite, qualname: str) -> bool:
        """AutoWeightsLoader's ignore_unexpected_prefixes/suffixes (and the `.bias` it always ignores)."""
        kw = {k.arg: self.interp.eval(k.value, {}, site.module, None) for k in site.ctor.keywords if k.arg}
        prefixes = kw.get("ignore_unexpected_prefixes") or []
        suffixes = [".bias", *(kw.get("ignore_unexpected_suffixes") or [])]
        return any(isinstance(p, str) and qualname.startswith(p) for p in prefixes) or any(
            isinstance(s, str) and qualname.endswith(s) for s in suffixes
        )


def _join(prefix: str, rest: str) -> str:
    return f"{prefix}.{rest}" if prefix and rest else prefix or rest


__all__ = ["AutoLoaderSim", "Mapper", "auto_site"]
