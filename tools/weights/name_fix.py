"""The checkpoint-name fix for a model file: the weight-name rule's remap table plus the rename line at
the top of the load_weights loop (`with_remap`), and the same fix written with the MTP layer index
taken from the config (`with_config_remap`).

The second has the same shape as the first (a prefix table applied at the top of the load_weights
loop), but the table is built from `config.num_hidden_layers` when it is called, so the patch holds for
every model size that shares the file instead of the one checkpoint it was derived from.
"""

from __future__ import annotations

import ast
import textwrap
from typing import Any

from tools.weights.exclusion_fix import templated_prefix
from tools.weights.loader_source import REMAP_FUNCTION, REMAP_TABLE, LoaderSite, read_remap_table, remap_block
from tools.weights.prefix_rules import PrefixRule

FUNCTION = "_remap_checkpoint_name"


def remap_function(rules: list[PrefixRule], config: dict[str, Any], layout: str) -> str:
    """Module-level source of the remap function; its prefixes are f-strings over num_hidden_layers."""
    rows = "".join(
        f'        (f"{templated_prefix(r.checkpoint, config)}.", f"{templated_prefix(r.framework, config)}."),\n'
        for r in rules
    )
    doc = textwrap.fill(
        f"The parameter name for a checkpoint tensor name: {layout}.",
        width=96,
        initial_indent='    """',
        subsequent_indent="    ",
    )
    return (
        f"def {FUNCTION}(name, config):\n"
        f'{doc}"""\n'
        f"    layer = config.num_hidden_layers\n"
        f"    for old, new in (\n{rows}    ):\n"
        f"        if name.startswith(old):\n"
        f"            return new + name[len(old) :]\n"
        f"    return name\n"
    )


def with_config_remap(
    text: str, site: LoaderSite, rules: list[PrefixRule], config: dict[str, Any], layout: str
) -> str:
    """`text` with the remap function before the loader's class and its call at the top of the loop."""
    lines = text.splitlines(keepends=True)
    call = f"{site.name_var} = {FUNCTION}({site.name_var}, self.config)"
    if lines[site.body_line - 1].strip() != call:
        lines.insert(site.body_line - 1, f"{site.body_indent}{call}\n")
    block = remap_function(rules, config, layout)
    return "".join(lines[: site.class_start - 1]) + block + "\n\n" + "".join(lines[site.class_start - 1 :])


__all__ = ["remap_function", "with_config_remap"]


def describe_layout(rules: list[PrefixRule], num_hidden_layers: int | None) -> str:
    """One comment line naming the checkpoint layout the table translates."""
    mtp = f"model.layers.{num_hidden_layers}"
    if num_hidden_layers is not None and any(r.checkpoint.startswith(mtp) for r in rules):
        targets = sorted({r.framework for r in rules if r.checkpoint.startswith(mtp)})
        return (
            f"the MTP/nextn head is stored as decoder layer {num_hidden_layers} ({mtp}.*, "
            f"num_hidden_layers, as GLM/DeepSeek checkpoints do); registered as {', '.join(targets)}."
        )
    return (
        "checkpoint prefixes "
        + ", ".join(r.checkpoint or "<root>" for r in rules)
        + " differ from the registered parameter names."
    )


def _replace_table(text: str, block: str) -> str:
    """Swap an existing table (and its comment lines) for the new block's table."""
    lines = text.splitlines(keepends=True)
    for node in ast.parse(text).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == REMAP_TABLE for t in node.targets):
            start = node.lineno - 1
            while start > 0 and lines[start - 1].startswith(
                ("# Checkpoint layout:", "#   ", "# Ordered (checkpoint_prefix")
            ):
                start -= 1
            table = block.split("\n\n\n")[0] + "\n"
            return "".join(lines[:start]) + table + "".join(lines[node.end_lineno :])
    return text


def with_remap(text: str, site: LoaderSite, rules: list[PrefixRule], layout: str) -> str:
    """The model source with the remap table and the loop's rename line (each added once)."""
    lines = text.splitlines(keepends=True)
    call = f"{site.name_var} = {REMAP_FUNCTION}({site.name_var})"
    if lines[site.body_line - 1].strip() != call:
        lines.insert(site.body_line - 1, f"{site.body_indent}{call}\n")
    text = "".join(lines)
    block = remap_block(rules, layout)
    if read_remap_table(text) is not None:
        return _replace_table(text, block)
    lines = text.splitlines(keepends=True)
    return "".join(lines[: site.class_start - 1]) + block + "\n\n" + "".join(lines[site.class_start - 1 :])
