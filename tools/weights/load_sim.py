"""Replay a model file's `load_weights` on checkpoint names, statically: the file is parsed, never imported.

A small interpreter walks the real function's AST for each checkpoint name: the stacked and expert
mappings (list literals, `FusedMoE.make_expert_params_mapping(...)` expanded the way sglang and vLLM
build it), `name.replace(...)` rewrites, f-string renames such as the nextn head's
`model.layers.{N}` -> `model.decoder`, skip rules (`if "rotary_emb.inv_freq" in name: continue`),
`params_dict[name]` lookups and the `weight_loader(...)` calls. Helpers of the same class, its base
classes (followed through `from ... import` into the repository) and module-level functions are
interpreted too. What it cannot evaluate (a flag computed at run time) counts as false, and the line
is recorded, so a prediction always says which optional paths it assumed off.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tools.weights.sim_eval import Interp, ModuleIndex, SimError, Unknown
from tools.weights.sim_setup import prepare_loop
from tools.weights.sim_values import Env

if TYPE_CHECKING:
    from tools.weights.module_tree import ModuleTree

__all__ = ["LoadOutcome", "LoaderSim", "SimError", "Unknown", "replay_names"]


@dataclass
class LoadOutcome:
    """What load_weights does with one checkpoint tensor name."""

    name: str
    status: str
    """loaded | skipped (a rule drops it on purpose) | dropped (its rewritten name is not a parameter and
    the loader skips it silently) | keyerror (`params_dict[name]` raises)."""
    target: str | None
    """The parameter name the loader looked up last (after every rewrite)."""
    rewrites: list[tuple[int, str, str]] = field(default_factory=list)
    """(line, name before, name after) for each rename, in order: the mapping that produced `target`."""
    line: int | None = None
    """The line of the skip, lookup or KeyError that decided the outcome."""


class LoaderSim:
    """A model class's load_weights, ready to replay on names; `params` None = every lookup succeeds, or
    (with `tree`, the module tree read from `__init__`s) every lookup whose module the model builds."""

    def __init__(
        self,
        repo: Path,
        model_file: Path,
        class_name: str,
        config: Env,
        params: set[str] | None = None,
        tree: ModuleTree | None = None,
    ) -> None:
        self.index = ModuleIndex(repo)
        self.module = self.index.load(model_file)
        self.class_name = class_name
        found = self.index.find_method(self.module, class_name, "load_weights")
        if found is None:
            raise SimError(f"{model_file}: class {class_name} has no load_weights (here or in its bases)")
        self.interp = Interp(self.index, config, params, tree)
        self.func_module, self.func = found
        self.loop_state = prepare_loop(self.interp, self.func_module, self.func, class_name)

    @property
    def assumed_false(self) -> list[int]:
        """Lines whose condition could not be evaluated statically and was taken as false."""
        return sorted(self.interp.assumed_false)

    @property
    def file(self) -> Path:
        return self.func_module.path

    def replay(self, name: str) -> LoadOutcome:
        """The outcome of the real loop body for one checkpoint name."""
        trace = self.interp.run_body(self.loop_state, name)
        return LoadOutcome(name, trace.status, trace.target, trace.rewrites, trace.line)

    def replay_all(self, names: Iterable[str]) -> list[LoadOutcome]:
        return replay_names(self.replay, names)


def replay_names(replay: Callable[[str], LoadOutcome], names: Iterable[str]) -> list[LoadOutcome]:
    """Every name's outcome. Routed experts of one layer take one replay: the expert mapping gives each
    expert id an entry of the same shape, so expert 17's path is expert 0's with the id changed."""
    seen: dict[str, tuple[str, LoadOutcome]] = {}
    out = []
    for name in names:
        match = _EXPERT_ID.search(name)
        if match is None:
            out.append(replay(name))
            continue
        key = _EXPERT_ID.sub(".experts.#.", name)
        if key in seen:
            rep_id, rep = seen[key]
            out.append(_with_expert(rep, name, rep_id, match.group(0)))
            continue
        outcome = replay(name)
        seen[key] = (match.group(0), outcome)
        out.append(outcome)
    return out


_EXPERT_ID = re.compile(r"\.experts\.\d+\.")


def _with_expert(rep: LoadOutcome, name: str, rep_id: str, new_id: str) -> LoadOutcome:

    def swap(s: str) -> str:
        return s.replace(rep_id, new_id)

    return LoadOutcome(
        name,
        rep.status,
        swap(rep.target) if rep.target else None,
        [(line, swap(a), swap(b)) for line, a, b in rep.rewrites],
        rep.line,
    )


def loader_class_for(source: str, architectures: list[str], draft: bool) -> str | None:
    """The class to simulate: the config's architecture, or its `...NextN`/`...MTP` draft class."""
    classes = [n.name for n in ast.parse(source).body if isinstance(n, ast.ClassDef)]
    for arch in architectures:
        wanted = [arch + "NextN", arch + "MTP"] if draft else [arch]
        for name in wanted:
            if name in classes:
                return name
    return None
