"""The AutoWeightsLoader replay on model-file excerpts shaped like vLLM's GLM-4 MoE + MTP files: a model
whose load_weights filters the stream, renames through a WeightsMapper and walks its module tree."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tools.weights.checkpoint import Checkpoint, TensorInfo
from tools.weights.framework_check import check_framework

UTILS = textwrap.dedent("""
    def get_spec_layer_idx_from_weight_name(config, weight_name):
        if not (n := getattr(config, "num_nextn_predict_layers", 0)):
            return None
        base = config.num_hidden_layers
        for i in range(n):
            if weight_name.startswith((f"model.layers.{base + i}.", f"layers.{base + i}.")):
                return base + i
        return None


    def skip_spec_layers(weights, config):
        return ((name, w) for name, w in weights if get_spec_layer_idx_from_weight_name(config, name) is None)


    def maybe_fuse(weights, fused_layers):
        if not fused_layers:
            yield from weights
            return
        for name, w in weights:
            yield name.replace("mlp.shared_experts.", "mlp.experts.99."), w
""")

LAYERS = textwrap.dedent("""
    class QKVParallelLinear:
        pass


    class RowParallelLinear:
        pass


    class MoERunner:
        def load_weights(self, weights):
            return []
""")

MODEL = textwrap.dedent("""
    from vllm.layers import MoERunner, QKVParallelLinear, RowParallelLinear
    from vllm.models.utils import AutoWeightsLoader, WeightsMapper, make_layers, maybe_fuse, skip_spec_layers


    class Attention(nn.Module):
        def __init__(self, config, prefix=""):
            self.qkv_proj = QKVParallelLinear(config.hidden_size)
            self.o_proj = RowParallelLinear(config.hidden_size)


    class Moe(nn.Module):
        def __init__(self, config, prefix=""):
            self.experts = MoERunner(config)
            self.shared_experts = Mlp(config)


    class Mlp(nn.Module):
        def __init__(self, config, prefix=""):
            self.gate_up_proj = QKVParallelLinear(config.hidden_size)
            self.down_proj = RowParallelLinear(config.hidden_size)


    class Layer(nn.Module):
        def __init__(self, config, prefix=""):
            self.self_attn = Attention(config)
            self.mlp = Moe(config)


    class GlmModel(nn.Module):
        hf_to_vllm_mapper = WeightsMapper(
            orig_to_new_stacked={
                ".q_proj": (".qkv_proj", "q"),
                ".k_proj": (".qkv_proj", "k"),
                ".v_proj": (".qkv_proj", "v"),
                ".shared_experts.gate_proj": (".shared_experts.gate_up_proj", 0),
                ".shared_experts.up_proj": (".shared_experts.gate_up_proj", 1),
            }
        )

        def __init__(self, *, vllm_config, prefix=""):
            config = vllm_config.model_config.hf_config
            self.start_layer, self.end_layer, self.layers = make_layers(
                config.num_hidden_layers, lambda prefix: Layer(config, prefix=prefix), prefix=f"{prefix}.layers"
            )

        def load_weights(self, weights):
            weights = maybe_fuse(skip_spec_layers(weights, self.config), self.fused_shared_expert_layers)
            loader = AutoWeightsLoader(self)
            return loader.load_weights(weights, mapper=self.hf_to_vllm_mapper)


    class GlmForCausalLM(nn.Module):
        def __init__(self, *, vllm_config, prefix=""):
            self.model = GlmModel(vllm_config=vllm_config, prefix="model")

        def load_weights(self, weights):
            loader = AutoWeightsLoader(self)
            return loader.load_weights(weights)
""")

MTP = textwrap.dedent("""
    import torch
    from vllm.models.glm import Layer
    from vllm.models.utils import get_spec_layer_idx_from_weight_name


    class MtpLayer(nn.Module):
        def __init__(self, config, prefix):
            self.mtp_block = Layer(config, prefix=prefix)


    class MtpPredictor(nn.Module):
        def __init__(self, *, vllm_config, prefix=""):
            config = vllm_config.model_config.hf_config
            self.mtp_start_layer_idx = config.num_hidden_layers
            self.num_mtp_layers = config.num_nextn_predict_layers
            self.layers = torch.nn.ModuleDict(
                {
                    str(idx): MtpLayer(config, f"{prefix}.layers.{idx}")
                    for idx in range(self.mtp_start_layer_idx, self.mtp_start_layer_idx + self.num_mtp_layers)
                }
            )


    class GlmMTP(nn.Module):
        def __init__(self, *, vllm_config, prefix=""):
            self.model = MtpPredictor(vllm_config=vllm_config, prefix="model")

        def load_weights(self, weights):
            stacked_params_mapping = [("gate_up_proj", "gate_proj", 0), ("gate_up_proj", "up_proj", 1)]
            params_dict = dict(self.named_parameters())
            for name, loaded_weight in weights:
                spec_layer = get_spec_layer_idx_from_weight_name(self.config, name)
                if spec_layer is None:
                    continue
                if "shared_head" not in name:
                    name = name.replace(f"model.layers.{spec_layer}.", f"model.layers.{spec_layer}.mtp_block.")
                for param_name, weight_name, shard_id in stacked_params_mapping:
                    if weight_name not in name:
                        continue
                    name = name.replace(weight_name, param_name)
                    param = params_dict[name]
                    break
                else:
                    param = params_dict[name]
                    param.weight_loader(param, loaded_weight)
""")

CONFIG = {
    "architectures": ["GlmForCausalLM"],
    "num_hidden_layers": 2,
    "num_nextn_predict_layers": 1,
    "hidden_size": 8,
}
GLOBS = ["vllm/models/*.py"]


def _repo(tmp_path: Path) -> Path:
    for rel, text in (
        ("vllm/models/utils.py", UTILS),
        ("vllm/layers.py", LAYERS),
        ("vllm/models/glm.py", MODEL),
        ("vllm/models/glm_mtp.py", MTP),
    ):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return tmp_path


def _layer(i: int, shared: str = "mlp.shared_experts") -> list[str]:
    p = f"model.layers.{i}"
    names = [f"{p}.self_attn.{n}_proj.weight" for n in "qkvo"]
    names += [f"{p}.{shared}.{n}_proj.weight" for n in ("gate", "up", "down")]
    return names + [f"{p}.mlp.experts.{e}.{n}_proj.weight" for e in range(2) for n in ("gate", "up", "down")]


def _ckpt(names: list[str], config: dict = CONFIG) -> Checkpoint:
    return Checkpoint(
        Path("."), {n: TensorInfo(n, "s.safetensors", "BF16", [1]) for n in names}, config=config
    )


def _meta_answer() -> dict:
    target = [f"model.layers.{i}.self_attn.{n}.weight" for i in range(2) for n in ("qkv_proj", "o_proj")]
    target += [
        f"model.layers.{i}.mlp.shared_experts.{n}.weight"
        for i in range(2)
        for n in ("gate_up_proj", "down_proj")
    ]
    target += [f"model.layers.{i}.mlp.experts.routed_experts.w13_weight" for i in range(2)]
    mtp = ["model.layers.2.mtp_block.mlp.shared_experts.gate_up_proj.weight"]
    mtp += ["model.layers.2.mtp_block.mlp.shared_experts.down_proj.weight"]
    return {
        "source": "model-class",
        "framework": "vllm",
        "class": "GlmForCausalLM",
        "params": {n: {} for n in target},
        "loaders": {"model": "vllm.models.glm.GlmModel"}
        | {f"model.layers.{i}.mlp.experts": "vllm.layers.MoERunner" for i in range(2)},
        "draft_class": "GlmMTP",
        "draft_params": {n: {} for n in mtp},
    }


def test_target_walk_loads_every_name_and_leaves_the_mtp_layer_to_the_draft(tmp_path):
    repo = _repo(tmp_path)
    names = _layer(0) + _layer(1) + [n for n in _layer(2) if "shared" in n]
    result = check_framework(repo, GLOBS, _ckpt(names), _meta_answer())
    target, draft = result.models
    assert (target.cls, draft.cls) == ("GlmForCausalLM", "GlmMTP")
    assert target.problems == [] and target.never_loaded == []  # experts: handed to the MoE runner
    assert draft.problems == [] and draft.never_loaded == []
    assert result.ok


def test_glm_style_mtp_names_are_a_keyerror_with_the_fix(tmp_path):
    repo = _repo(tmp_path)
    names = _layer(0) + _layer(1) + [n for n in _layer(2, "shared_experts") if "shared" in n]
    result = check_framework(repo, GLOBS, _ckpt(names), _meta_answer())
    draft = result.models[1]
    assert {o.name: (o.status, o.target) for o in draft.problems} == {
        "model.layers.2.shared_experts.gate_proj.weight": (
            "keyerror",
            "model.layers.2.mtp_block.shared_experts.gate_up_proj.weight",
        ),
        "model.layers.2.shared_experts.up_proj.weight": (
            "keyerror",
            "model.layers.2.mtp_block.shared_experts.gate_up_proj.weight",
        ),
        "model.layers.2.shared_experts.down_proj.weight": (
            "keyerror",
            "model.layers.2.mtp_block.shared_experts.down_proj.weight",
        ),
    }
    assert [(r.checkpoint, r.framework) for r in draft.fix] == [
        ("model.layers.2.shared_experts", "model.layers.2.mlp.shared_experts")
    ]
    assert not result.ok


def test_static_tree_finds_a_submodule_the_model_does_not_have(tmp_path):
    repo = _repo(tmp_path)
    names = _layer(0) + _layer(1) + ["model.layers.1.self_attn.q_norm.weight"]
    result = check_framework(repo, GLOBS, _ckpt(names), {"source": "blocked", "error": "no triton"})
    target = result.models[0]
    assert result.blocked and target.expected is None
    assert [(o.name, o.status, o.target) for o in target.problems] == [
        ("model.layers.1.self_attn.q_norm.weight", "keyerror", "model.layers.1.self_attn.q_norm.weight")
    ]


def test_static_tree_follows_the_mapper_and_the_stream_filter(tmp_path):
    repo = _repo(tmp_path)
    names = _layer(0) + _layer(1) + _layer(2, "shared_experts")  # layer 2 is the MTP head: filtered out
    result = check_framework(repo, GLOBS, _ckpt(names), {"source": "blocked", "error": "no triton"})
    target = result.models[0]
    assert target.problems == []
    q = next(o for o in _outcomes(repo, names) if o.name == "model.layers.0.self_attn.q_proj.weight")
    assert q.target == "model.layers.0.self_attn.qkv_proj.weight"


def _outcomes(repo: Path, names: list[str]):
    from tools.weights.framework_check import make_sim

    sim = make_sim(repo, repo / "vllm/models/glm.py", "GlmForCausalLM", CONFIG, None, None)
    return sim.replay_all(names)


def test_static_tree_predicts_the_glm_style_keyerror_without_the_built_model(tmp_path):
    repo = _repo(tmp_path)
    blocked = {"source": "blocked", "error": "no triton"}
    ok = _layer(0) + _layer(1) + [n for n in _layer(2) if "shared" in n]
    assert check_framework(repo, GLOBS, _ckpt(ok), blocked).ok
    moved = _layer(0) + _layer(1) + [n for n in _layer(2, "shared_experts") if "shared" in n]
    draft = check_framework(repo, GLOBS, _ckpt(moved), blocked).models[1]
    assert {(o.status, o.target) for o in draft.problems} == {
        ("keyerror", "model.layers.2.mtp_block.shared_experts.gate_up_proj.weight"),
        ("keyerror", "model.layers.2.mtp_block.shared_experts.down_proj.weight"),
    }


MIXIN = textwrap.dedent("""
    import concurrent.futures
    from dataclasses import dataclass


    @dataclass(frozen=True)
    class NextNEnabledConfig:
        nextn_layer_prefix: str


    @dataclass(frozen=True)
    class NextNDisabledConfig:
        pass


    class LoaderMixin:
        def _nextn_conf(self, is_nextn):
            if not is_nextn:
                return NextNDisabledConfig()
            return NextNEnabledConfig(nextn_layer_prefix=f"model.layers.{self.config.num_hidden_layers}")

        def do_load_weights(self, weights, is_nextn=False):
            nextn_conf = self._nextn_conf(is_nextn)
            cached_a_proj = {}
            with concurrent.futures.ThreadPoolExecutor() as executor:
                params_dict = dict(self.named_parameters())
                for name, loaded_weight in weights:
                    match nextn_conf:
                        case NextNEnabledConfig(nextn_layer_prefix=layer_prefix):
                            if not name.startswith(layer_prefix):
                                continue
                            name = name.replace(layer_prefix, "model.decoder")
                        case NextNDisabledConfig():
                            if int(name.split(".")[2]) >= self.config.num_hidden_layers:
                                continue
                    if "q_a_proj" in name or "kv_a_proj" in name:
                        cached_a_proj[name] = loaded_weight
                        q_name = name if "q_a_proj" in name else name.replace("kv_a_proj", "q_a_proj")
                        kv_name = name if "kv_a_proj" in name else name.replace("q_a_proj", "kv_a_proj")
                        if q_name in cached_a_proj and kv_name in cached_a_proj:
                            param = params_dict[name.replace("kv_a_proj", "fused_a_proj")]
                        continue
                    param = params_dict[name]


    class DsForCausalLM(nn.Module, LoaderMixin):
        def load_weights(self, weights, is_nextn=False):
            self.do_load_weights(weights, is_nextn)


    class DsForCausalLMNextN(DsForCausalLM):
        def load_weights(self, weights):
            super().load_weights(weights, is_nextn=True)
""")


def test_mixin_loader_with_match_on_the_nextn_config_and_fused_projections(tmp_path):
    (tmp_path / "m").mkdir()
    (tmp_path / "m/ds.py").write_text(MIXIN)
    config = {"architectures": ["DsForCausalLM"], "num_hidden_layers": 1, "num_nextn_predict_layers": 1}
    names = [
        f"model.layers.{i}.self_attn.{p}.weight"
        for i in range(2)
        for p in ("q_a_proj", "kv_a_proj", "o_proj")
    ]
    answer = {
        "source": "model-class",
        "framework": "sglang",
        "class": "DsForCausalLM",
        "params": {
            "model.layers.0.self_attn.fused_a_proj.weight": {},
            "model.layers.0.self_attn.o_proj.weight": {},
        },
        "draft_class": "DsForCausalLMNextN",
        "draft_params": {
            "model.decoder.self_attn.fused_a_proj.weight": {},
            "model.decoder.self_attn.o_proj.weight": {},
        },
    }
    target, draft = check_framework(tmp_path, ["m/*.py"], _ckpt(names, config), answer).models
    assert (target.problems, target.never_loaded) == ([], [])  # the fused param loads once both halves came
    assert (draft.problems, draft.never_loaded) == ([], [])  # layer 1 is the nextn head, renamed to decoder
    moved = [n.replace("layers.1.self_attn.o_proj", "layers.1.o_proj") for n in names]
    draft = check_framework(tmp_path, ["m/*.py"], _ckpt(moved, config), answer).models[1]
    assert [(o.name, o.status, o.target) for o in draft.problems] == [
        ("model.layers.1.o_proj.weight", "keyerror", "model.decoder.o_proj.weight")
    ]
