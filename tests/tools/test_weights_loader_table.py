"""tools.weights.loader_table: a loader's own remap table found with ast, its pattern learned from names."""

from __future__ import annotations

import ast

from tools.weights import PrefixRule
from tools.weights.loader_source import find_loader_sites
from tools.weights.loader_table import find_loader_table, insert_entries, learn_pattern

# A module-level rename function (not a method), single-quoted entries.
SOURCE = """
PARTS = (
    ('enorm', 'enorm'),
    ('mlp', 'block.mlp'),
)
UNRELATED = (("a", "b"),)


def rename(name):
    for old, new in PARTS:
        if name.startswith('model.layers.2.' + old + '.'):
            return 'model.mtp.' + new + name[len('model.layers.2.' + old):]
    return name


class M:
    def load_weights(self, weights):
        stacked_params_mapping = [("gate_up_proj", "gate_proj", 0)]
        for name, w in weights:
            name = rename(name)
"""


def test_the_table_read_by_the_loops_rename_function_is_found():
    site = find_loader_sites(SOURCE)[0]
    table = find_loader_table(SOURCE, site)
    assert (table.function, table.is_method, table.table) == ("rename", False, "PARTS")
    assert table.entries == [("enorm", "enorm"), ("mlp", "block.mlp")]
    plain = SOURCE.replace("            name = rename(name)\n", "            pass\n")
    assert find_loader_table(plain, find_loader_sites(plain)[0]) is None  # load_weights renames nothing


def test_pattern_is_learned_from_entries_that_load_and_none_when_nothing_loads():
    names = [
        "model.layers.2.enorm.weight",
        "model.layers.2.mlp.experts.0.gate_proj.weight",
        "model.layers.0.mlp.experts.0.gate_proj.weight",
    ]
    expected = {
        "model.mtp.enorm.weight",
        "model.mtp.block.mlp.experts.0.gate_up_proj.weight",
        "model.layers.0.mlp.experts.0.gate_up_proj.weight",
    }
    entries = [("enorm", "enorm"), ("mlp", "block.mlp")]
    pattern = learn_pattern(entries, names, expected, [("gate_up_proj", "gate_proj")])
    assert (pattern.checkpoint, pattern.framework) == ("model.layers.2.", "model.mtp.")
    assert pattern.entry(PrefixRule("model.layers.2.mlp.shared_experts", "model.mtp.shared_experts")) == (
        "mlp.shared_experts",
        "shared_experts",
    )
    assert pattern.entry(PrefixRule("model.layers.2.mlp.shared_experts", "model.heads.shared")) is None
    assert learn_pattern(entries, names, {"lm_head.weight"}) is None


def test_inserted_entries_keep_the_tables_quotes_and_go_before_the_entry_that_would_shadow_them():
    site = find_loader_sites(SOURCE)[0]
    table = find_loader_table(SOURCE, site)
    patched = insert_entries(SOURCE, table, [("mlp.shared_experts", "shared_experts"), ("hnorm", "hnorm")])
    ast.parse(patched)
    assert (
        "PARTS = (\n    ('mlp.shared_experts', 'shared_experts'),\n    ('enorm', 'enorm'),\n"
        "    ('mlp', 'block.mlp'),\n    ('hnorm', 'hnorm'),\n)" in patched
    )
