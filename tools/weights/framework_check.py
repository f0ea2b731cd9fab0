"""A checkpoint against a real framework checkout: expected params from its model class (meta device) or,
where construction is blocked, from the static replay alone; the real load_weights replayed on every name.

Predicts what a launch would do with each tensor: loaded, skipped on purpose, dropped silently (sglang's
`if name not in params_dict: continue`) or a KeyError, with the lines that renamed it; the params no
tensor reaches; exclusion-list entries that name checkpoint modules the framework registers under other
names; and the smallest checkpoint-name prefix rule that makes the dropped tensors load.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tools.weights.auto_loader import AutoLoaderSim, auto_site
from tools.weights.checkpoint import Checkpoint
from tools.weights.exclusions import ExclusionMiss, exclusion_misses, read_exclusions
from tools.weights.load_sim import LoaderSim, LoadOutcome, SimError
from tools.weights.module_tree import StaticTree, tree_from_meta
from tools.weights.prefix_rules import PrefixRule, apply_rules
from tools.weights.sim_eval import ModuleIndex

ParamShapes = dict[str, dict[str, Any] | None]
"""The built model's parameters as the meta-device answer lists them: name -> {dtype, shape} (or null)."""

# The draft head takes the token embedding and LM head from the target model (sglang set_embed_and_head,
# vLLM shares them too): never loaded from the head's own tensors, and not a finding.
SHARED_WITH_TARGET = ("model.embed_tokens.weight", "lm_head.weight")
# KV-cache quantization scales of the attention: the framework keeps its default (1.0) when the checkpoint
# has none (sglang's and vLLM's KV-cache methods), so a checkpoint without them loads; not a finding.
DEFAULTED = (".k_scale", ".v_scale")
STACKED = [
    ("qkv_proj", "q_proj"),
    ("qkv_proj", "k_proj"),
    ("qkv_proj", "v_proj"),
    ("gate_up_proj", "gate_proj"),
    ("gate_up_proj", "up_proj"),
]


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
    blocked: dict[str, Any] | None
    models: list[ModelCheck]
    exclusion_misses: list[ExclusionMiss]

    @property
    def ok(self) -> bool:
        return bool(self.models) and not (
            self.exclusion_misses or any(m.problems or m.never_loaded or m.error for m in self.models)
        )


def find_model_file(repo: Path, globs: list[str], cls: str) -> Path | None:
    """The file under `repo` matching the profile's model_loaders globs that defines class `cls`."""
    needle = f"class {cls}("
    for pattern in globs:
        for path in sorted(repo.glob(pattern)):
            if needle in path.read_text(encoding="utf-8", errors="replace"):
                return path
    return None


def _checkpoint_rule(name: str, target: str, param: str) -> PrefixRule | None:
    """The checkpoint-name prefix rule that turns this dropped tensor's lookup into `param`: the change
    between lookup and param, carried over to the checkpoint name, scoped to the submodule they share."""
    t, p, c = target.split("."), param.split("."), name.split(".")
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
    c_head, scope = c[: len(c) - k], c[len(c) - k : len(c) - 2]  # the shared submodule, not its leaf
    if old and c_head[-len(old) :] != old:
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
        rule = _checkpoint_rule(o.name, o.target, partner) if partner else None
        if rule and rule not in rules and not any(n.startswith(rule.checkpoint + ".") for n in loaded):
            rules.append(rule)
    return rules


_UNQUANTIZED = {"BF16", "F16", "F32", "bfloat16", "float16", "float32"}
_QUANTIZED = ("float8", "uint8", "int8", "int4")


def _dtype_problems(
    outcomes: list[LoadOutcome], ckpt: Checkpoint, params: dict[str, dict[str, Any]]
) -> list[LoadOutcome]:
    """Unquantized checkpoint weights that load into a quantized parameter: an exclusion the model missed."""
    out = []
    for o in outcomes:
        info, spec = ckpt.tensors.get(o.name), params.get(o.target or "")
        if (
            o.status == "loaded"
            and info
            and spec
            and info.dtype in _UNQUANTIZED
            and str(spec.get("dtype", "")).startswith(_QUANTIZED)
        ):
            out.append(
                LoadOutcome(o.name, f"dtype {info.dtype} -> {spec['dtype']}", o.target, o.rewrites, o.line)
            )
    return out


def make_sim(
    repo: Path,
    model_file: Path,
    cls: str,
    config: dict[str, Any],
    params: ParamShapes | None,
    loaders: dict[str, str] | None,
) -> LoaderSim | AutoLoaderSim:
    """The replay for `cls`: vLLM's AutoWeightsLoader walk over the module tree (from the built model, else
    from the model file's `__init__`s), or the hand-written `for name, w in weights:` loop."""
    index = ModuleIndex(repo)
    module = index.load(model_file)
    static = StaticTree(index, config, model_file.parent).build(module, cls) if params is None else None
    if auto_site(index, module, cls) is None:
        return LoaderSim(repo, model_file, cls, config, set(params) if params is not None else None, static)
    tree = static if static is not None else tree_from_meta(params or {}, loaders or {}, index)
    return AutoLoaderSim(repo, model_file, cls, config, tree)


def _covered(param: str, targets: set[str | None]) -> bool:
    """Loaded directly, or inside a module that loads its own names (a fused-MoE runner)."""
    parts = param.split(".")
    return any(".".join(parts[:i]) in targets for i in range(1, len(parts) + 1))


def check_model(
    repo: Path,
    model_file: Path,
    cls: str,
    ckpt: Checkpoint,
    params: ParamShapes | None,
    draft: bool,
    loaders: dict[str, str] | None = None,
) -> ModelCheck:
    sim = make_sim(repo, model_file, cls, ckpt.config, params, loaders)
    shapes = params if params is None else {n: (v or {}) for n, v in params.items()}
    outcomes = sim.replay_all(ckpt.names)
    problems = [o for o in outcomes if o.status in ("dropped", "keyerror")]
    problems += _dtype_problems(outcomes, ckpt, shapes or {})
    targets = {o.target for o in outcomes if o.status == "loaded"}
    never = sorted(
        n
        for n in (shapes or {})
        if not _covered(n, targets) and not (draft and n in SHARED_WITH_TARGET) and not n.endswith(DEFAULTED)
    )
    renamed = {
        o.name: o.target for o in outcomes if o.status in ("loaded", "dropped", "keyerror") and o.target
    }
    fix = _fix(problems, never, {o.name for o in outcomes if o.status == "loaded"})
    for o in problems:  # the module the framework registers for a dropped tensor is where the fix sends it
        after = sim.replay(apply_rules(o.name, fix)) if fix else None
        if after is not None and after.status == "loaded" and after.target is not None:
            renamed[o.name] = after.target
    loop_module = sim.loop_state.module if sim.loop_state else None
    return ModelCheck(
        cls,
        str(model_file.relative_to(repo)),
        len(shapes) if shapes is not None else None,
        len(targets),
        problems,
        never,
        sim.assumed_false,
        fix,
        renamed,
        str(loop_module.path.relative_to(repo.resolve())) if loop_module else "",
        sim.loop_state.loop_class if sim.loop_state else "",
    )


def _draft_names(arch: str) -> list[str]:
    """Draft-class names a framework gives the MTP head of `arch`: sglang `Glm4MoeForCausalLMNextN`,
    vLLM `Glm4MoeMTP`, `DeepSeekMTP` (for DeepseekV3ForCausalLM: the version dropped, case aside)."""
    stem = arch.removesuffix("ForCausalLM")
    bare = stem.rstrip("0123456789").removesuffix("V") if stem[-1:].isdigit() else stem
    return [arch + "NextN", arch + "MTP", stem + "MTP", bare + "MTP"]


def _model_class(
    repo: Path, globs: list[str], archs: list[str], draft: bool, built: str | None
) -> tuple[Path, str] | None:
    """(file, class) to replay: the class the framework built, else the config's architecture (or its
    draft class), found in the checkout's model files."""
    names = [built] if built else []
    for arch in archs:
        names += _draft_names(arch) if draft else [arch]
    for name in names:
        file = find_model_file(repo, globs, name)
        if file is not None:
            return file, name
    if draft:  # the class name's case differs from the architecture's (DeepSeekMTP)
        wanted = {n.lower() for n in names}
        for pattern in globs:
            for path in sorted(repo.glob(pattern)):
                for cls in re.findall(
                    r"^class (\w+)\(", path.read_text(encoding="utf-8", errors="replace"), re.MULTILINE
                ):
                    if cls.lower() in wanted:
                        return path, cls
    return None


def check_framework(
    repo: Path, globs: list[str], ckpt: Checkpoint, answer: dict[str, Any] | None
) -> FrameworkCheck:
    """Replay the target (and draft, when the config has nextn layers) class on the checkpoint's names."""
    built_by = answer if answer and answer.get("source") == "model-class" else None
    blocked = None if built_by else (answer or {"error": "not run"})
    source = (
        f"model class {built_by.get('class')} built by {built_by['framework']} {built_by.get('version')} "
        f"on the meta device"
        if built_by is not None
        else "static replay of load_weights (construction blocked)"
    )
    archs = [a for a in ckpt.config.get("architectures") or [] if isinstance(a, str)]
    models: list[ModelCheck] = []
    drafts: list[bool] = []  # models[i] is the draft (nextn/MTP) class when drafts[i]
    for draft in (False, True):
        if draft and not ckpt.config.get("num_nextn_predict_layers"):
            continue
        built = built_by.get("draft_class" if draft else "class") if built_by is not None else None
        found = _model_class(repo, globs, archs, draft, built)
        if found is None:
            continue
        file, cls = found
        params = built_by.get("draft_params" if draft else "params") if built_by is not None else None
        loaders = built_by.get("draft_loaders" if draft else "loaders") if built_by is not None else None
        try:
            models.append(check_model(repo, file, cls, ckpt, params, draft, loaders))
        except SimError as exc:
            models.append(ModelCheck(cls, str(file.relative_to(repo)), None, 0, error=str(exc)))
        drafts.append(draft)
    excl = read_exclusions(ckpt.root, ckpt.config)
    misses: list[ExclusionMiss] = []
    if excl is not None:
        for m, draft in zip(models, drafts, strict=True):
            missed = exclusion_misses(excl, m.renamed, STACKED)
            params = built_by.get("draft_params" if draft else "params") if built_by is not None else None
            if params is not None:  # the built class decides: a miss is real where the weight is quantized
                missed = [x for x in missed if _quantized(x, m.renamed, params)]
            misses += [x for x in missed if x not in misses]
    return FrameworkCheck(source, blocked, models, misses)


def _quantized(miss: ExclusionMiss, renamed: dict[str, str], params: ParamShapes) -> bool:
    """Does a tensor of the missed module load into a quantized parameter of the built model?"""
    return any(
        str((params.get(target) or {}).get("dtype", "")).startswith(_QUANTIZED)
        for tensor, target in renamed.items()
        if tensor.rsplit(".", 1)[0] == miss.checkpoint_module
    )


__all__ = ["FrameworkCheck", "ModelCheck", "check_framework", "check_model", "find_model_file"]
