"""What a model file's sglang-shaped `load_weights` says about names, read with `ast` (never imported).

The shape: `def load_weights(self, weights)` holding `stacked_params_mapping = [(param, shard, id), ...]`
and a loop `for name, loaded_weight in weights:` that may skip names (`if "rotary_emb.inv_freq" in
name: continue`) and, once remapped by rocport, rewrites names through a module-level table.
"""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass, field

from tools.weights.prefix_rules import PrefixRule

REMAP_TABLE = "_CHECKPOINT_NAME_REMAP"
REMAP_FUNCTION = "_remap_checkpoint_name"


@dataclass
class LoaderSite:
    """Where and how one class's load_weights reads checkpoint names."""

    class_name: str
    class_start: int
    """1-based first line of the class (its first decorator, else the `class` line)."""
    loop_line: int
    """1-based line of `for name, ... in weights:`."""
    body_line: int
    """1-based line of the loop body's first statement."""
    body_indent: str
    name_var: str
    mappings: list[tuple[str, str]] = field(default_factory=list)
    """(param_name, shard_name) pairs of the stacked/fused mapping literals, in source order."""
    skip: list[str] = field(default_factory=list)
    """Substrings whose names the loop skips."""
    runtime_mappings: list[str] = field(default_factory=list)
    """Mapping variables built at run time (e.g. FusedMoE.make_expert_params_mapping): not replayable."""


def _mapping_pairs(node: ast.AST) -> list[tuple[str, str]]:
    """(param, shard) pairs from a list/tuple literal of tuples whose first two items are strings."""
    if not isinstance(node, (ast.List, ast.Tuple)):
        return []
    pairs = []
    for elt in node.elts:
        if not isinstance(elt, ast.Tuple) or len(elt.elts) < 2:
            continue
        first, second = elt.elts[0], elt.elts[1]
        if (
            isinstance(first, ast.Constant)
            and isinstance(second, ast.Constant)
            and isinstance(first.value, str)
            and isinstance(second.value, str)
        ):
            pairs.append((first.value, second.value))
    return pairs


def _mappings_in(func: ast.FunctionDef) -> tuple[list[tuple[str, str]], list[str]]:
    """(pairs of the literal mappings, names of mappings computed at run time)."""
    pairs: list[tuple[str, str]] = []
    runtime: list[str] = []
    for node in ast.walk(func):
        targets = [t.id for t in getattr(node, "targets", []) if isinstance(t, ast.Name)]
        if isinstance(node, ast.Assign) and any(t.endswith("params_mapping") for t in targets):
            found = _mapping_pairs(node.value)
            pairs.extend(found)
            if not found:
                runtime.extend(t for t in targets if t.endswith("params_mapping"))
    return pairs, runtime


def _skips_in(loop: ast.For, var: str) -> list[str]:
    """`if "<text>" in name: continue` -> text."""
    out = []
    for stmt in loop.body:
        if not (isinstance(stmt, ast.If) and stmt.body and isinstance(stmt.body[0], ast.Continue)):
            continue
        test = stmt.test
        if (
            isinstance(test, ast.Compare)
            and len(test.ops) == 1
            and isinstance(test.ops[0], ast.In)
            and isinstance(test.left, ast.Constant)
            and isinstance(test.left.value, str)
            and isinstance(test.comparators[0], ast.Name)
            and test.comparators[0].id == var
        ):
            out.append(test.left.value)
    return out


def _name_loop(func: ast.FunctionDef) -> tuple[ast.For, str] | None:
    for node in ast.walk(func):
        if isinstance(node, ast.For) and isinstance(node.target, ast.Tuple) and node.target.elts:
            first = node.target.elts[0]
            if isinstance(first, ast.Name) and isinstance(node.iter, ast.Name) and node.body:
                return node, first.id
    return None


def find_loader_sites(source: str, any_method: bool = False) -> list[LoaderSite]:
    """Every class in `source` whose load_weights (with `any_method`, any method: sglang's DeepSeek mixin
    loops in `do_load_weights`) iterates `for name, weight in weights:`."""
    tree = ast.parse(source)
    lines = source.splitlines()
    sites = []
    for cls in tree.body:
        if not isinstance(cls, ast.ClassDef):
            continue
        for func in cls.body:
            if not (isinstance(func, ast.FunctionDef) and (any_method or func.name == "load_weights")):
                continue
            found = _name_loop(func)
            if found is None:
                continue
            loop, var = found
            first = loop.body[0]
            indent = lines[first.lineno - 1][: first.col_offset]
            start = min([d.lineno for d in cls.decorator_list] + [cls.lineno])
            pairs, runtime = _mappings_in(func)
            sites.append(
                LoaderSite(
                    cls.name,
                    start,
                    loop.lineno,
                    first.lineno,
                    indent,
                    var,
                    pairs,
                    _skips_in(loop, var),
                    runtime,
                )
            )
    return sites


def read_remap_table(source: str, table: str = REMAP_TABLE) -> list[PrefixRule] | None:
    """The (checkpoint_prefix, framework_prefix) table a previous fix wrote, or None when absent."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == table for t in node.targets
        ):
            # file order: the generated function applies the first matching prefix, and so must any check
            return [PrefixRule(a.rstrip("."), b.rstrip(".")) for a, b in _mapping_pairs(node.value)]
    return None


def remap_block(
    rules: list[PrefixRule], layout: str, table: str = REMAP_TABLE, function: str = REMAP_FUNCTION
) -> str:
    """Module-level source for the remap table and the function that applies it."""
    rows = "".join(
        f'    ("{r.checkpoint + "." if r.checkpoint else ""}", '
        f'"{r.framework + "." if r.framework else ""}"),\n'
        for r in rules
    )
    comment = "\n".join(
        textwrap.wrap(
            f"Checkpoint layout: {layout}", width=100, initial_indent="# ", subsequent_indent="#   "
        )
    )
    return (
        f"{comment}\n"
        f"# Ordered (checkpoint_prefix, framework_prefix) pairs, most specific first; written by rocport.\n"
        f"{table} = (\n{rows})\n\n\n"
        f"def {function}(name):\n"
        f'    """The framework parameter name for a checkpoint tensor name."""\n'
        f"    for old, new in {table}:\n"
        f"        if name.startswith(old):\n"
        f"            return new + name[len(old):]\n"
        f"    return name\n"
    )
