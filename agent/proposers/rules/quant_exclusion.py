"""quant_exclusion: the quant config's excluded-module names go through the loader's name remap.

The GLM-5.2-on-MI355X case: the checkpoint's `quantization_config.modules_to_not_convert` names the
MTP head's shared experts by their checkpoint prefix (`model.layers.N.mlp.shared_experts`) while the
framework builds them under another (`model.mtp.mlp.shared_expert`), so they are built as MXFP4 and
the bf16 tensor meets a param with half the K dimension. The checkpoint's config.json is not part of
the framework repo, so the patch goes where the model builds its layers: the model's `__init__`
adds the registered name of every excluded checkpoint module (through the same remap table its
`load_weights` uses) before any layer asks the quant config. The generic matching code and other
models are left alone, and the checkpoint names stay in the list. When the loader renames through a
function of its own, the hook is handed that function; when the model already passes it to the quant
config, the exclusions are fixed by the weight_name fix of its table and this fixer declines.
"""

from __future__ import annotations

import ast
import time

from agent.proposers.rules.base import Decline, Workspace, make_proposal, register
from agent.proposers.rules.loader_remap import replay_table, table_fix
from agent.proposers.rules.weight_names import (
    LoaderFile,
    expected_params_for,
    find_loader,
    patched_sources,
    plan_rules,
    read_checkpoint,
)
from tools.records import CheckResult, Failure, Proposal
from tools.weights.exclusions import EXCLUSION_KEYS, excluded_modules, registered_modules, remap_module
from tools.weights.loader_source import REMAP_FUNCTION, find_loader_sites, read_remap_table
from tools.weights.loader_table import LoaderTable, find_loader_table, insert_entries
from tools.weights.name_fix import describe_layout, with_remap

FAMILY = "quant_exclusion"
HOOK = "_with_framework_exclusions"


def hook_block(keys: list[str], rename: bool = False) -> str:
    """The hook; with `rename` it takes the loader's rename function, else it calls rocport's table."""
    attrs = "".join(f'"{k}", ' for k in keys).rstrip()
    return (
        f"def {HOOK}(quant_config{', rename' if rename else ''}):\n"
        f'    """Exclusion lists name checkpoint modules; add their registered names via the loader remap."""\n'
        f"    for attr in ({attrs}):\n"
        f"        names = getattr(quant_config, attr, None)\n"
        f"        if names:\n"
        f'            registered = [{"rename" if rename else REMAP_FUNCTION}(n + ".")[:-1] for n in names]\n'
        f"            setattr(quant_config, attr, list(dict.fromkeys([*names, *registered])))\n"
        f"    return quant_config\n"
    )


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
    first = (
        body[1]
        if (isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and len(body) > 1)
        else body[0]
    )
    lines = text.splitlines(keepends=True)
    indent = lines[first.lineno - 1][: first.col_offset]
    lines.insert(first.lineno - 1, f"{indent}{call}\n")
    text = "".join(lines)
    table_end = next(
        n.end_lineno
        for n in ast.parse(text).body
        if isinstance(n, ast.FunctionDef) and n.name == REMAP_FUNCTION
    )
    lines = text.splitlines(keepends=True)
    return "".join(lines[:table_end]) + "\n\n" + hook_block(keys) + "".join(lines[table_end:])


def _renames_exclusions(init: ast.FunctionDef, table: LoaderTable) -> bool:
    """True when the model's __init__ already hands the loader's rename function to something (the quant config)."""
    for node in ast.walk(init):
        if (
            table.is_method
            and isinstance(node, ast.Attribute)
            and node.attr == table.function
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
        ):
            return True
        if not table.is_method and isinstance(node, ast.Name) and node.id == table.function:
            return True
    return False


def _hook_line(init: ast.FunctionDef, table: LoaderTable) -> ast.stmt:
    """The first statement of __init__ after the attributes the rename method reads are set; Decline when
    the quant config is used before that."""
    body = (
        init.body[1:]
        if (
            isinstance(init.body[0], ast.Expr)
            and isinstance(init.body[0].value, ast.Constant)
            and len(init.body) > 1
        )
        else init.body
    )
    sets = [
        i
        for i, stmt in enumerate(body)
        for node in ast.walk(stmt)
        if isinstance(node, ast.Attribute)
        and isinstance(node.ctx, ast.Store)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
        and node.attr in table.self_attrs
    ]
    at = max(sets) + 1 if sets and table.is_method else 0
    if at >= len(body) or any(
        isinstance(n, ast.Name) and n.id == "quant_config" for stmt in body[:at] for n in ast.walk(stmt)
    ):
        raise Decline(
            f"__init__ uses quant_config before self.{', self.'.join(sorted(table.self_attrs))} "
            f"(read by {table.function}) is set: no point to rename the exclusions"
        )
    return body[at]


def through_loader_remap(
    loader: LoaderFile, names: list[str], expected: dict, lists: dict[str, list[str]]
) -> tuple[str, dict[str, str]]:
    """The model source whose __init__ renames exclusions with the loader's own rename function (adding the
    entries its table lacks), and {checkpoint module: registered module}."""
    text, site = loader.text, loader.site
    table = find_loader_table(text, site)
    if table is None:
        raise Decline(f"{site.class_name}: its loader has no rename table to send the exclusions through")
    init = _init_of(text, site.class_name)
    if init is None or "quant_config" not in [a.arg for a in init.args.args + init.args.kwonlyargs]:
        raise Decline(f"{site.class_name}.__init__ takes no quant_config: cannot see where layers are built")
    if f"quant_config = {HOOK}(quant_config" in text:
        return text, {}
    if _renames_exclusions(init, table):
        raise Decline(
            f"exclusions already go through the loader's remap ({table.function}); a name the "
            f"table {table.table} lacks is a weight_name fix, which renames both"
        )
    fix = table_fix(text, site, names, expected)
    if fix is not None and fix.entries:
        text = insert_entries(text, table, fix.entries)
    rules = replay_table(text, site, names, expected)
    modules = registered_modules(expected)
    fixed = {
        n: remap_module(n, rules or [])
        for ns in lists.values()
        for n in ns
        if n not in modules and remap_module(n, rules or []) in modules
    }
    if not fixed:
        raise Decline("no excluded module changes name under the loader remap into a registered module")
    table = find_loader_table(text, site)
    init = _init_of(text, site.class_name)
    if table is None or init is None:  # the source with the added entries no longer reads as before
        raise Decline(f"{site.class_name}: its loader table or __init__ is unreadable after adding entries")
    first = _hook_line(init, table)
    rename = f"self.{table.function}" if table.is_method else table.function
    lines = text.splitlines(keepends=True)
    indent = lines[first.lineno - 1][: first.col_offset]
    lines.insert(first.lineno - 1, f"{indent}quant_config = {HOOK}(quant_config, {rename})\n")
    start = next(s.class_start for s in find_loader_sites(text) if s.class_name == site.class_name) - 1
    return "".join(lines[:start]) + hook_block(list(lists), rename=True) + "\n\n" + "".join(
        lines[start:]
    ), fixed


class QuantExclusionFixer:
    """Make quant exclusions written in checkpoint names match the framework's registered modules."""

    family = FAMILY
    kinds: tuple[str, ...] = ("quant_exclusion",)

    def propose(self, failure: Failure, ws: Workspace) -> Proposal | None:
        if failure.kind not in self.kinds:
            return None
        ckpt = read_checkpoint(ws)
        lists = excluded_modules(ckpt.config)
        if not lists:
            raise Decline(
                "the checkpoint's quantization_config has no exclusion list "
                f"({', '.join(EXCLUSION_KEYS)}): nothing to remap"
            )
        expected = expected_params_for(ws)
        loader = find_loader(failure, ws, ckpt)
        if read_remap_table(loader.text) is None and find_loader_table(loader.text, loader.site):
            new, fixed = through_loader_remap(loader, ckpt.names, expected, lists)
            return self._proposal(failure, loader, new, fixed)
        rules = plan_rules(loader, ckpt.names, expected)
        text = loader.text
        if rules is not None:  # the loader does not remap yet: the same table serves both
            text = with_remap(text, loader.site, rules, describe_layout(rules, ckpt.num_hidden_layers))
        rules = read_remap_table(text) or []
        modules = registered_modules(expected)
        fixed = {
            n: remap_module(n, rules)
            for names in lists.values()
            for n in names
            if n not in modules and remap_module(n, rules) in modules
        }
        if not fixed:
            raise Decline("no excluded module changes name under the loader remap into a registered module")
        new = with_exclusion_hook(text, loader.site.class_name, list(lists))
        return self._proposal(failure, loader, new, fixed)

    def _proposal(
        self, failure: Failure, loader: LoaderFile, new: str, fixed: dict[str, str]
    ) -> Proposal | None:
        if new == loader.text:
            return None
        shapes = failure.facts.get("shapes")
        pairs = "; ".join(f"{a} -> {b}" for a, b in sorted(fixed.items()))
        rationale = (
            f"{loader.rel}: the checkpoint's quantization_config excludes modules by checkpoint name, "
            f"but {loader.site.class_name} builds them under registered names, so they are "
            f"quantized (MXFP4 packs two values per byte: half the K dimension"
            f"{', ' + str(shapes) if shapes else ''}). Excluded names that resolve only through the "
            f"loader remap: {pairs}. The config.json belongs to the checkpoint, not the repo, and "
            f"the generic exclusion matching serves every model, so the model's __init__ adds the "
            f"registered name of each excluded module (keeping the checkpoint names) with the same "
            f"remap its load_weights uses, before any layer is built."
        )
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
        sites = find_loader_sites(text)
        if HOOK not in text or not sites:
            continue
        rules = read_remap_table(text)
        if rules is None:  # the hook hands the loader's own rename function over
            rules = replay_table(text, sites[0], ckpt.names, expected)
        if rules is None:
            continue
        names = [n for ns in excluded_modules(ckpt.config).values() for n in ns]
        unresolved = [n for n in names if n not in modules and remap_module(n, rules) not in modules]
        detail = (
            f"{rel}: all {len(names)} excluded modules resolve to registered modules"
            if not unresolved
            else f"{rel}: excluded modules match nothing registered: {', '.join(unresolved[:5])}"
        )
        return CheckResult("quant_exclusions", not unresolved, detail, duration_s=time.monotonic() - start)
    return CheckResult(
        "quant_exclusions",
        False,
        "the patched files hold no remap table and exclusion hook",
        duration_s=time.monotonic() - start,
    )


register(QuantExclusionFixer())
