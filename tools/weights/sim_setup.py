"""Set-up of the load_weights interpreter: run the function up to its `for name, weight in weights:`
loop, following delegations (`super().load_weights(...)`, `self.do_load_weights(weights, ...)`)."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tools.weights.sim_index import Module
from tools.weights.sim_values import Env, SelfObj, SimError, Value

if TYPE_CHECKING:
    from tools.weights.sim_eval import Interp


@dataclass
class LoopState:
    """Where the per-name replay starts: the weights loop, the variables bound before it, the name's variable."""

    module: Module
    loop: ast.For
    env: Env
    name_var: str
    cls: str
    loop_class: str = ""
    """The class whose load_weights body holds the loop (the model class itself or a base)."""


def prepare_loop(
    it: Interp,
    mod: Module,
    func: ast.FunctionDef,
    cls: str,
    kwargs: Env | None = None,
    args: list[Value] | None = None,
) -> LoopState:
    """Bind the arguments and run `func` up to its weights loop; SimError when it has none."""
    it.home = it.home or mod  # the model file: where `cls` itself is defined
    env = it._bind(func, [SelfObj(it.config, cls), "<weights>", *(args or [])], kwargs or {}, mod)
    found = _set_up(it, func.body, env, mod, cls, func)
    if found is not None:
        return found
    handed = next(
        (
            ast.unparse(c.func)
            for c in ast.walk(func)
            if isinstance(c, ast.Call) and any(isinstance(a, ast.Name) and a.id == "weights" for a in c.args)
        ),
        None,
    )
    via = f" (it hands the names to `{handed}(...)`, which this replay does not follow)" if handed else ""
    raise SimError(f"{mod.path}:{func.lineno}: {func.name} has no `for name, weight in weights:` loop{via}")


def _set_up(
    it: Interp, body: list[ast.stmt], env: Env, mod: Module, cls: str, func: ast.FunctionDef
) -> LoopState | None:
    """Run statements up to the loop over the weights (also inside a `with` block), or follow a
    delegation; None when this block holds neither."""
    for stmt in body:
        if isinstance(stmt, ast.For) and _iterates_weights(stmt):
            return LoopState(mod, stmt, env, _name_target(stmt), cls, it.index.class_of(mod, func) or cls)
        delegated = _delegation(it, stmt, mod, cls, env)
        if delegated is not None:
            return delegated
        if isinstance(stmt, ast.With):
            found = _set_up(it, stmt.body, env, mod, cls, func)
            if found is not None:
                return found
            continue
        it.exec_stmts([stmt], env, mod, cls)
    return None


def _delegation(it: Interp, stmt: ast.stmt, mod: Module, cls: str, env: Env) -> LoopState | None:
    """`super().load_weights(weights, is_nextn=True)` or `self.do_load_weights(weights, is_nextn)`:
    prepare that method's loop with those arguments."""
    call = stmt.value if isinstance(stmt, (ast.Expr, ast.Return)) else None
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute):
        return None
    owner = call.func.value
    passes_weights = bool(call.args) and isinstance(call.args[0], ast.Name) and call.args[0].id == "weights"
    if isinstance(owner, ast.Name) and owner.id == "self" and passes_weights:
        found = it.index.find_method(it.home or mod, cls, call.func.attr)
        if found is not None:
            args = [it.eval(a, env, mod, cls) for a in call.args[1:]]
            kwargs = {k.arg: it.eval(k.value, env, mod, cls) for k in call.keywords if k.arg}
            return prepare_loop(it, found[0], found[1], cls, kwargs, args)
    if call.func.attr != "load_weights":
        return None
    if not (isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "super"):
        raise SimError(
            f"{mod.path}:{stmt.lineno}: load_weights hands the names to "
            f"`{ast.unparse(call.func)}` (per-module dispatch over the built model tree, as vLLM's "
            f"AutoWeightsLoader does); a static replay needs the model class built"
        )
    kwargs = {k.arg: it.eval(k.value, env, mod, cls) for k in call.keywords if k.arg}
    found = it.index.find_method(mod, cls, "load_weights", skip_first=True)
    if found is None:
        raise SimError(f"{mod.path}: {cls}.load_weights delegates to a base class not found in the repo")
    bmod, bfunc = found
    return prepare_loop(it, bmod, bfunc, cls, kwargs)


def _iterates_weights(loop: ast.For) -> bool:
    return (
        isinstance(loop.target, ast.Tuple)
        and bool(loop.target.elts)
        and isinstance(loop.target.elts[0], ast.Name)
        and isinstance(loop.iter, ast.Name)
    )


def _name_target(loop: ast.For) -> str:
    """The name variable of a loop `_iterates_weights` accepted (`name` of `for name, w in weights`)."""
    first = loop.target.elts[0] if isinstance(loop.target, ast.Tuple) else loop.target
    return first.id if isinstance(first, ast.Name) else ""
