"""quant_exclusion: the quant config's excluded-module names go through the loader's name remap.

The GLM-5.2-on-MI355X case: the checkpoint's `quantization_config.modules_to_not_convert` names the
MTP head's shared experts by their checkpoint prefix (`model.layers.N.mlp.shared_experts`) while the
framework builds them under another (`model.mtp.mlp.shared_expert`), so they are built as MXFP4 and
the bf16 tensor meets a param with half the K dimension. The checkpoint's config.json is not part of
the framework repo, so the patch goes where the model builds its layers: the model's `__init__`
adds the registered name of every excluded checkpoint module (through the same remap table its
`load_weights` uses) before any layer asks the quant config. The generic matching code and other
models are left alone, and the checkpoint names stay in the list.
"""
from __future__ import annotations

import ast
import time

from agent.rules.base import Decline, Workspace, make_proposal, register
from agent.rules.weight_names import (
    describe_layout,
    expected_params_for,
    find_loader,
    patched_sources,
    plan_rules,
    read_checkpoint,
    with_remap,
)
from tools.records import CheckResult, Failure, Proposal
from tools.weights import PrefixRule, apply_rules
from tools.weights.loader_source import REMAP_FUNCTION, find_loader_sites, read_remap_table

FAMILY = "quant_exclusion"
EXCLUSION_KEYS = ("modules_to_not_convert", "ignored_layers", "exclude_modules")
HOOK = "_with_framework_exclusions"


def excluded_modules(config: dict) -> dict[str, list[str]]:
    """{key: names} of the plain (non-pattern) exclusion lists in config.json's quantization_config."""
    qc = config.get("quantization_config") or {}
    out = {}
    for key in EXCLUSION_KEYS:
        names = qc.get(key)
        if isinstance(names, list):
            out[key] = [n for n in names if isinstance(n, str) and "*" not in n and not n.startswith("re:")]
    return {k: v for k, v in out.items() if v}


def registered_modules(expected: dict) -> set[str]:
    """Every module prefix that owns an expected parameter (`a.b.c.weight` -> a, a.b, a.b.c)."""
    out = set()
    for name in expected:
        parts = name.split(".")
        out.update(".".join(parts[:i]) for i in range(1, len(parts)))
    return out


def remap_module(module: str, rules: list[PrefixRule]) -> str:
    """A module name through the tensor-name rules (a module is a prefix of its tensors' names)."""
    return apply_rules(module + ".", rules)[:-1]


def hook_block(keys: list[str]) -> str:
    attrs = "".join(f'"{k}", ' for k in keys).rstrip()
    return (f"def {HOOK}(quant_config):\n"
            f'    """Exclusion lists name checkpoint modules; add their registered names via the loader remap."""\n'
            f"    for attr in ({attrs}):\n"
            f"        names = getattr(quant_config, attr, None)\n"
            f"        if names:\n"
            f'            registered = [{REMAP_FUNCTION}(n + ".")[:-1] for n in names]\n'
            f"            setattr(quant_config, attr, list(dict.fromkeys([*names, *registered])))\n"
            f"    return quant_config\n")


def _init_of(text: str, class_name: str) -> ast.FunctionDef | None:
    for node in ast.parse(text).body:
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                    return item
    return None


def with_exclusion_hook(text: str, class_name: str, keys: list[str]) -> str:
    """The model source with the hook function and its call at the top of the model's __init__."""
    init = _init_of(text, class_name)
    if init is None or "quant_config" not in [a.arg for a in init.args.args + init.args.kwonlyargs]:
        raise Decline(f"{class_name}.__init__ takes no quant_config: cannot see where layers are built")
    call = f"quant_config = {HOOK}(quant_config)"
    if call in text:
        return text
    body = init.body
    first = body[1] if (isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                        and len(body) > 1) else body[0]
    lines = text.splitlines(keepends=True)
    indent = lines[first.lineno - 1][:first.col_offset]
    lines.insert(first.lineno - 1, f"{indent}{call}\n")
    text = "".join(lines)
    table_end = next(n.end_lineno for n in ast.parse(text).body
                     if isinstance(n, ast.FunctionDef) and n.name == REMAP_FUNCTION)
    lines = text.splitlines(keepends=True)
    return "".join(lines[:table_end]) + "\n\n" + hook_block(keys) + "".join(lines[table_end:])


class QuantExclusionFixer:
    """Make quant exclusions written in checkpoint names match the framework's registered modules."""

    family = FAMILY
    kinds = ("quant_exclusion",)

    def propose(self, failure: Failure, ws: Workspace) -> Proposal | None:
        if failure.kind not in self.kinds:
            return None
        ckpt = read_checkpoint(ws)
        lists = excluded_modules(ckpt.config)
        if not lists:
            raise Decline("the checkpoint's quantization_config has no exclusion list "
                          f"({', '.join(EXCLUSION_KEYS)}): nothing to remap")
        expected = expected_params_for(ws)
        loader = find_loader(failure, ws, ckpt)
        rules = plan_rules(loader, ckpt.names, expected)
        text = loader.text
        if rules is not None:  # the loader does not remap yet: the same table serves both
            text = with_remap(text, loader.site, rules, describe_layout(rules, ckpt.num_hidden_layers))
        rules = read_remap_table(text) or []
        modules = registered_modules(expected)
        fixed = {n: remap_module(n, rules) for names in lists.values() for n in names
                 if n not in modules and remap_module(n, rules) in modules}
        if not fixed:
            raise Decline("no excluded module changes name under the loader remap into a registered module")
        new = with_exclusion_hook(text, loader.site.class_name, list(lists))
        if new == loader.text:
            return None
        shapes = failure.facts.get("shapes")
        pairs = "; ".join(f"{a} -> {b}" for a, b in sorted(fixed.items()))
        rationale = (f"{loader.rel}: the checkpoint's quantization_config excludes modules by checkpoint name, "
                     f"but {loader.site.class_name} builds them under registered names, so they are "
                     f"quantized (MXFP4 packs two values per byte: half the K dimension"
                     f"{', ' + str(shapes) if shapes else ''}). Excluded names that resolve only through the "
                     f"loader remap: {pairs}. The config.json belongs to the checkpoint, not the repo, and "
                     f"the generic exclusion matching serves every model, so the model's __init__ adds the "
                     f"registered name of each excluded module (keeping the checkpoint names) with the same "
                     f"table its load_weights uses, before any layer is built.")
        return make_proposal(failure, self.family, {loader.rel: (loader.text, new)}, rationale)

    def check(self, proposal: Proposal, ws: Workspace) -> CheckResult:
        """The cheap check before any server launch: every exclusion resolves to a registered module."""
        return check_exclusions(proposal, ws)


def check_exclusions(proposal: Proposal, ws: Workspace) -> CheckResult:
    """Every excluded checkpoint module resolves to a registered module through the patched table."""
    start = time.monotonic()
    try:
        sources = patched_sources(proposal, ws)
        ckpt, expected = read_checkpoint(ws), expected_params_for(ws)
    except (ValueError, Decline) as exc:
        return CheckResult("quant_exclusions", False, str(exc), duration_s=time.monotonic() - start)
    modules = registered_modules(expected)
    for rel, text in sources.items():
        rules = read_remap_table(text)
        if rules is None or HOOK not in text or not find_loader_sites(text):
            continue
        names = [n for ns in excluded_modules(ckpt.config).values() for n in ns]
        unresolved = [n for n in names if n not in modules and remap_module(n, rules) not in modules]
        detail = (f"{rel}: all {len(names)} excluded modules resolve to registered modules" if not unresolved
                  else f"{rel}: excluded modules match nothing registered: {', '.join(unresolved[:5])}")
        return CheckResult("quant_exclusions", not unresolved, detail, duration_s=time.monotonic() - start)
    return CheckResult("quant_exclusions", False, "the patched files hold no remap table and exclusion hook",
                       duration_s=time.monotonic() - start)


register(QuantExclusionFixer())
