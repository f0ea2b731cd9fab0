"""The fix for an exclusion list that names modules the way the checkpoint stores them while the model
class registers them under other names (GLM's MTP layer `model.layers.<N>` built as `model.decoder`).

The patch goes into the model file, where the renaming happens: the class that builds the renamed
modules passes its quantization config through the framework's own exclusion-list hook
(sglang `apply_weight_name_mapper`, vLLM `apply_vllm_mapper`) with a WeightsMapper whose prefixes are
derived from the config (`num_hidden_layers`), never a hard-coded layer index. Both spellings of each
entry are renamed (with and without `model.`), as sglang's Fp8Config keeps both.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

from tools.weights.exclusions import ExclusionMiss
from tools.weights.prefix_rules import PrefixRule

FUNCTION = "_checkpoint_exclusion_mapper"
HOOKS = ("apply_weight_name_mapper", "apply_vllm_mapper")


def exclusion_rules(misses: list[ExclusionMiss]) -> list[PrefixRule]:
    """checkpoint prefix -> framework prefix, cut above the module path both share
    (`model.layers.92.mlp.shared_experts` vs `model.decoder.mlp.shared_experts`
    -> `model.layers.92` -> `model.decoder`)."""
    rules: list[PrefixRule] = []
    for miss in misses:
        ck, fw = miss.checkpoint_module.split("."), miss.framework_prefix.split(".")
        k = 0
        while k < min(len(ck), len(fw)) and ck[-1 - k] == fw[-1 - k]:
            k += 1
        rule = PrefixRule(".".join(ck[: len(ck) - k]), ".".join(fw[: len(fw) - k]))
        if rule.checkpoint and rule not in rules:
            rules.append(rule)
    return rules


def templated_prefix(prefix: str, config: dict[str, Any]) -> str:
    """An f-string body for `prefix` with its MTP layer index written as `num_hidden_layers + k`."""
    base, extra = config.get("num_hidden_layers"), config.get("num_nextn_predict_layers") or 0

    def layer(m: re.Match[str]) -> str:
        n = int(m.group(1))
        if isinstance(base, int) and base <= n < base + max(extra, 1):
            return "layers.{layer}" if n == base else f"layers.{{layer + {n - base}}}"
        return m.group(0)

    return re.sub(r"layers\.(\d+)", layer, prefix)


def mapper_source(rules: list[PrefixRule], config: dict[str, Any]) -> str:
    """Module-level function returning the WeightsMapper for the exclusion list."""
    rows = []
    for r in rules:
        for ck, fw in ((r.checkpoint, r.framework), _bare(r.checkpoint, r.framework)):
            row = f'            f"{templated_prefix(ck, config)}.": "{fw}.",\n'
            if row not in rows:
                rows.append(row)
    return (
        f"def {FUNCTION}(config):\n"
        f'    """The quantization exclusion list names the MTP layer as the checkpoint stores it\n'
        f'    (layer num_hidden_layers); this model registers it under other names."""\n'
        f"    layer = config.num_hidden_layers\n"
        f"    return WeightsMapper(\n        orig_to_new_prefix={{\n{''.join(rows)}        }}\n    )\n"
    )


def _bare(ck: str, fw: str) -> tuple[str, str]:
    """The entry spelled without `model.` (Fp8Config keeps both spellings)."""
    return ck.removeprefix("model."), fw.removeprefix("model.")


def find_hook(repo: Path, globs: list[str]) -> str | None:
    """The framework's method that renames a quantization config's exclusion list through a WeightsMapper."""
    for pattern in globs:
        for path in sorted(repo.glob(pattern)):
            text = path.read_text(encoding="utf-8", errors="replace")
            for hook in HOOKS:
                if f"def {hook}(" in text:
                    return hook
    return None


def mapper_import(repo: Path, model_file: Path) -> str | None:
    """`from pkg.mod import WeightsMapper` for the repo module defining it, searched next to the model file."""
    for path in sorted(model_file.parent.glob("*.py")):
        if "class WeightsMapper" in path.read_text(encoding="utf-8", errors="replace"):
            rel = path.relative_to(repo).with_suffix("")
            parts = rel.parts[1:] if rel.parts[0] == "python" else rel.parts
            return f"from {'.'.join(parts)} import WeightsMapper"
    return None


def with_exclusion_mapper(
    text: str, cls: str, rules: list[PrefixRule], config: dict[str, Any], hook: str, imp: str
) -> str:
    """`text` with the mapper function and, in `cls.__init__`, the hook call before the quant config is used."""
    tree = ast.parse(text)
    node = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls), None)
    init = (
        next((f for f in node.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
        if node
        else None
    )
    if node is None or init is None:
        raise ValueError(f"no {cls}.__init__ in the model file")
    use = next(
        (
            s
            for s in init.body
            if any(
                isinstance(c, ast.Call)
                and any(isinstance(a, ast.Name) and a.id == "quant_config" for a in c.args)
                for c in ast.walk(s)
            )
        ),
        None,
    )
    if use is None:
        raise ValueError(f"{cls}.__init__ passes no quant_config on")
    lines = text.splitlines(keepends=True)
    indent = lines[use.lineno - 1][: use.col_offset]
    call = (
        f"{indent}# the exclusion list carries checkpoint names: rename it like this class's modules\n"
        f'{indent}if quant_config is not None and hasattr(quant_config, "{hook}"):\n'
        f"{indent}    quant_config.{hook}({FUNCTION}(config))\n"
    )
    lines.insert(use.lineno - 1, call)
    start = min([d.lineno for d in node.decorator_list] + [node.lineno])
    lines.insert(start - 1, mapper_source(rules, config) + "\n\n")
    out = "".join(lines)
    if "WeightsMapper" not in text.split(f"class {cls}", 1)[0]:
        out_lines = out.splitlines(keepends=True)
        out_lines.insert(_import_line(tree, imp), imp + "\n")
        out = "".join(out_lines)
    return out


def _import_line(tree: ast.Module, imp: str) -> int:
    """0-based line index where `imp` goes: before the first top-level `from` import sorting after it."""
    module = imp.split()[1]
    top = module.split(".")[0]
    froms = [(n, n.module) for n in tree.body if isinstance(n, ast.ImportFrom) and n.module and not n.level]
    same = [(n, m) for n, m in froms if m.split(".")[0] == top]  # the framework's own import group
    later = [n for n, m in same if m > module]
    if later:
        return min(n.lineno for n in later) - 1
    if same:
        return max(n.end_lineno or n.lineno for n, _ in same)
    return max(n.end_lineno or n.lineno for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom)))


__all__ = ["exclusion_rules", "find_hook", "mapper_import", "mapper_source", "with_exclusion_mapper"]
