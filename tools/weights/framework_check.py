"""A checkpoint against a real framework checkout: expected params from its model class (meta device) or,
where construction is blocked, from the static replay alone; the real load_weights replayed on every name.

Predicts what a launch would do with each tensor: loaded, skipped on purpose, dropped silently (sglang's
`if name not in params_dict: continue`) or a KeyError, with the lines that renamed it; the params no
tensor reaches; exclusion-list entries that name checkpoint modules the framework registers under other
names; and the smallest checkpoint-name prefix rule that makes the dropped tensors load.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from tools.weights.checkpoint import Checkpoint
from tools.weights.exclusions import ExclusionMiss, exclusion_misses, read_exclusions
from tools.weights.load_sim import LoaderSim, LoadOutcome, SimError, loader_class_for
from tools.weights.remap import PrefixRule, apply_rules

# The draft head takes the token embedding and LM head from the target model (sglang set_embed_and_head,
# vLLM shares them too): never loaded from the head's own tensors, and not a finding.
SHARED_WITH_TARGET = ("model.embed_tokens.weight", "lm_head.weight")
STACKED = [("qkv_proj", "q_proj"), ("qkv_proj", "k_proj"), ("qkv_proj", "v_proj"),
           ("gate_up_proj", "gate_proj"), ("gate_up_proj", "up_proj")]


@dataclass
class ModelCheck:
    """One model class (the target or its nextn/MTP draft) against the checkpoint."""

    cls: str
    file: str
    expected: int | None
    loaded: int
    problems: list[LoadOutcome] = field(default_factory=list)
    never_loaded: list[str] = field(default_factory=list)
    assumed_false: list[int] = field(default_factory=list)
    fix: list[PrefixRule] = field(default_factory=list)
    renamed: dict[str, str] = field(default_factory=dict)
    loop_file: str = ""
    """The file and class whose load_weights holds the `for name, ... in weights:` loop (a nextn class
    often delegates to its base): where a fix goes."""
    loop_class: str = ""
    error: str | None = None
    """Why load_weights could not be replayed (then nothing else here is known)."""


@dataclass
class FrameworkCheck:
    source: str
    """Where the expected names came from: the model class (meta device) or the static replay only."""
    blocked: dict | None
    models: list[ModelCheck]
    exclusion_misses: list[ExclusionMiss]

    @property
    def ok(self) -> bool:
        return bool(self.models) and not (self.exclusion_misses or any(m.problems or m.never_loaded or m.error
                                                                         for m in self.models))


def find_model_file(repo: Path, globs: list[str], cls: str) -> Path | None:
    """The file under `repo` matching the profile's model_loaders globs that defines class `cls`."""
    needle = f"class {cls}("
    for pattern in globs:
        for path in sorted(repo.glob(pattern)):
            if needle in path.read_text(encoding="utf-8", errors="replace"):
                return path
    return None


def _checkpoint_rule(outcome: LoadOutcome, param: str) -> PrefixRule | None:
    """The checkpoint-name prefix rule that turns this dropped tensor's lookup into `param`: the change
    between lookup and param, carried over to the checkpoint name, scoped to the submodule they share."""
    t, p, c = outcome.target.split("."), param.split("."), outcome.name.split(".")
    k = 0
    while k < min(len(t), len(p)) and t[-1 - k] == p[-1 - k]:
        k += 1
    if len(c) < k:
        return None
    t_head, p_head = t[: len(t) - k], p[: len(p) - k]
    i = 0
    while i < min(len(t_head), len(p_head)) and t_head[i] == p_head[i]:
        i += 1
    old, new = t_head[i:], p_head[i:]
    c_head, scope = c[: len(c) - k], c[len(c) - k: len(c) - 2]  # the shared submodule, not its leaf
    if old and c_head[-len(old):] != old:
        return None
    base = c_head[: len(c_head) - len(old)] if old else c_head
    return PrefixRule(".".join(c_head + scope), ".".join(base + new + scope))


def _fix(problems: list[LoadOutcome], never: list[str], loaded: set[str]) -> list[PrefixRule]:
    """One rule per dropped submodule; none that would also rename a tensor that loads today."""
    rules: list[PrefixRule] = []
    for o in problems:
        if not o.target:
            continue
        leaf = ".".join(o.target.split(".")[-2:])
        partner = next((p for p in never if p.endswith("." + leaf)), None)
        rule = _checkpoint_rule(o, partner) if partner else None
        if rule and rule not in rules and not any(n.startswith(rule.checkpoint + ".") for n in loaded):
            rules.append(rule)
    return rules


_UNQUANTIZED = {"BF16", "F16", "F32", "bfloat16", "float16", "float32"}
_QUANTIZED = ("float8", "uint8", "int8", "int4")


def _dtype_problems(outcomes: list[LoadOutcome], ckpt: Checkpoint, params: dict) -> list[LoadOutcome]:
    """Unquantized checkpoint weights that load into a quantized parameter: an exclusion the model missed."""
    out = []
    for o in outcomes:
        info, spec = ckpt.tensors.get(o.name), params.get(o.target or "")
        if (o.status == "loaded" and info and spec and info.dtype in _UNQUANTIZED
                and str(spec.get("dtype", "")).startswith(_QUANTIZED)):
            out.append(LoadOutcome(o.name, f"dtype {info.dtype} -> {spec['dtype']}", o.target, o.rewrites, o.line))
    return out


def check_model(repo: Path, model_file: Path, cls: str, ckpt: Checkpoint, params: dict | None,
                draft: bool) -> ModelCheck:
    sim = LoaderSim(repo, model_file, cls, ckpt.config, set(params) if params is not None else None)
    params = params if params is None else {n: (v or {}) for n, v in params.items()}
    outcomes = sim.replay_all(ckpt.names)
    problems = [o for o in outcomes if o.status in ("dropped", "keyerror")]
    problems += _dtype_problems(outcomes, ckpt, params or {})
    targets = {o.target for o in outcomes if o.status == "loaded"}
    never = sorted(n for n in (params or {}) if n not in targets and not (draft and n in SHARED_WITH_TARGET))
    renamed = {o.name: o.target for o in outcomes if o.status in ("loaded", "dropped", "keyerror") and o.target}
    fix = _fix(problems, never, {o.name for o in outcomes if o.status == "loaded"})
    for o in problems:  # the module the framework registers for a dropped tensor is where the fix sends it
        after = sim.replay(apply_rules(o.name, fix)) if fix else None
        if after is not None and after.status == "loaded":
            renamed[o.name] = after.target
    loop_module = sim.loop_state.module
    return ModelCheck(cls, str(model_file.relative_to(repo)), len(params) if params is not None else None,
                      len(targets), problems, never, sim.assumed_false, fix, renamed,
                      str(loop_module.path.relative_to(repo.resolve())), sim.loop_state.loop_class)


def check_framework(repo: Path, globs: list[str], ckpt: Checkpoint, answer: dict | None) -> FrameworkCheck:
    """Replay the target (and draft, when the config has nextn layers) class on the checkpoint's names."""
    blocked = None if answer and answer.get("source") == "model-class" else (answer or {"error": "not run"})
    source = (f"model class {answer.get('class')} built by {answer['framework']} {answer.get('version')} "
              f"on the meta device" if blocked is None else "static replay of load_weights (construction blocked)")
    archs = [a for a in ckpt.config.get("architectures") or [] if isinstance(a, str)]
    models = []
    for draft in (False, True):
        if draft and not ckpt.config.get("num_nextn_predict_layers"):
            continue
        file = next((f for a in archs for f in [find_model_file(repo, globs, a + ("NextN" if draft else ""))] if f),
                    None) or next((f for a in archs if (f := find_model_file(repo, globs, a + "MTP"))), None)
        cls = loader_class_for(file.read_text(encoding="utf-8"), archs, draft) if file else None
        if cls is None:
            continue
        params = None if blocked else (answer.get("draft_params") if draft else answer.get("params"))
        try:
            models.append(check_model(repo, file, cls, ckpt, params, draft))
        except SimError as exc:
            models.append(ModelCheck(cls, str(file.relative_to(repo)), None, 0, error=str(exc)))
    excl = read_exclusions(ckpt.root, ckpt.config)
    misses: list[ExclusionMiss] = []
    if excl is not None:
        for m in models:
            misses += [x for x in exclusion_misses(excl, m.renamed, STACKED) if x not in misses]
    return FrameworkCheck(source, blocked, models, misses)


__all__ = ["FrameworkCheck", "ModelCheck", "check_framework", "check_model", "find_model_file"]
