"""The patches the framework check writes into a model file: the checkpoint-name remap and the
exclusion-list mapper, both with the MTP layer index taken from the config at run time."""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass, field

from tools.weights.exclusion_fix import exclusion_rules, with_exclusion_mapper
from tools.weights.exclusions import ExclusionMiss
from tools.weights.loader_source import find_loader_sites
from tools.weights.name_fix import with_config_remap
from tools.weights.prefix_rules import PrefixRule

NEXTN = textwrap.dedent("""
    import torch
    from fw.models.base import Base


    class ModelNextN(Base):
        def __init__(self, config, quant_config=None, prefix=""):
            self.config = config
            self.quant_config = quant_config
            self.model = Decoder(config, quant_config, prefix="model")

        def load_weights(self, weights):
            params_dict = dict(self.named_parameters())
            for name, loaded_weight in weights:
                params_dict[name].weight_loader(loaded_weight)
""")
CONFIG = {"num_hidden_layers": 92, "num_nextn_predict_layers": 1}


@dataclass
class WeightsMapper:
    """The shape of the frameworks' own mapper, for running the generated function."""

    orig_to_new_prefix: dict = field(default_factory=dict)


class _Config:
    def __init__(self, layers: int):
        self.num_hidden_layers = layers


def _run(source: str, function: str, *args):
    namespace = {"WeightsMapper": WeightsMapper}
    tree = ast.parse(source)
    funcs = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == function]
    # the patch is the code under test: run its function the way the framework will
    exec(compile(ast.Module(body=funcs, type_ignores=[]), "<patch>", "exec"), namespace)  # noqa: S102
    return namespace[function](*args)


def test_exclusion_rule_is_cut_above_the_shared_module_path():
    miss = ExclusionMiss(
        "model.layers.92.mlp.shared_experts",
        "model.layers.92.mlp.shared_experts",
        "model.decoder.mlp.shared_experts",
    )
    assert exclusion_rules([miss]) == [PrefixRule("model.layers.92", "model.decoder")]


def test_exclusion_mapper_is_passed_through_the_hook_before_the_quant_config_is_used():
    rules = [PrefixRule("model.layers.92", "model.decoder")]
    imp = "from fw.models.utils import WeightsMapper"
    out = with_exclusion_mapper(NEXTN, "ModelNextN", rules, CONFIG, "apply_weight_name_mapper", imp)
    ast.parse(out)
    lines = out.splitlines()
    hook = next(i for i, line in enumerate(lines) if "quant_config.apply_weight_name_mapper(" in line)
    use = next(i for i, line in enumerate(lines) if "self.model = Decoder(" in line)
    assert hook < use and imp in lines
    mapper = _run(out, "_checkpoint_exclusion_mapper", _Config(92))
    assert mapper.orig_to_new_prefix == {"model.layers.92.": "model.decoder.", "layers.92.": "decoder."}
    # the index comes from the config, so the same patch serves a model with another depth
    assert _run(out, "_checkpoint_exclusion_mapper", _Config(46)).orig_to_new_prefix["model.layers.46."] == (
        "model.decoder."
    )


def test_name_remap_follows_num_hidden_layers():
    site = next(s for s in find_loader_sites(NEXTN) if s.class_name == "ModelNextN")
    rules = [PrefixRule("model.layers.92.shared_experts", "model.layers.92.mlp.shared_experts")]
    out = with_config_remap(NEXTN, site, rules, CONFIG, "MTP shared experts without mlp.")
    assert "name = _remap_checkpoint_name(name, self.config)" in out

    def remap(name, layers):
        return _run(out, "_remap_checkpoint_name", name, _Config(layers))

    assert remap("model.layers.92.shared_experts.up_proj.weight", 92) == (
        "model.layers.92.mlp.shared_experts.up_proj.weight"
    )
    assert remap("model.layers.61.shared_experts.up_proj.weight", 61) == (
        "model.layers.61.mlp.shared_experts.up_proj.weight"
    )
    assert (
        remap("model.layers.5.shared_experts.up_proj.weight", 92)
        == "model.layers.5.shared_experts.up_proj.weight"
    )
