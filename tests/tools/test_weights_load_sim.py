"""The static load_weights replay on model-file excerpts shaped like sglang's GLM-4.5 MoE + nextn files."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tools.weights.checkpoint import Checkpoint, TensorInfo
from tools.weights.exclusions import exclusion_misses, read_exclusions
from tools.weights.framework_check import check_framework
from tools.weights.load_sim import LoaderSim
from tools.weights.loader_source import find_loader_sites
from tools.weights.name_fix import with_remap

BASE = textwrap.dedent("""
    from fused import FusedMoE


    class MoeForCausalLM(Base):
        def load_weights(self, weights, is_nextn=False, params_dict=None):
            if is_nextn:
                nextn_layer_id = self.config.num_hidden_layers
            stacked_params_mapping = [
                ("qkv_proj", "q_proj", "q"),
                ("qkv_proj", "k_proj", "k"),
                ("qkv_proj", "v_proj", "v"),
                ("gate_up_proj", "gate_proj", 0),
                ("gate_up_proj", "up_proj", 1),
            ]
            expert_params_mapping = FusedMoE.make_expert_params_mapping(
                ckpt_gate_proj_name="gate_proj", ckpt_down_proj_name="down_proj", ckpt_up_proj_name="up_proj",
                num_experts=self.config.n_routed_experts + self.num_fused_shared_experts)
            if is_nextn:
                nextn_layer_prefix = f"model.layers.{nextn_layer_id}"
                nextn_spec_weight_names = ["shared_head.norm", "eh_proj", "enorm", "hnorm"]
            else:
                nextn_layer_prefix = None
                nextn_spec_weight_names = []
            if params_dict is None:
                params_dict = dict(self.named_parameters())
            for name, loaded_weight in weights:
                if not is_nextn:
                    if name.startswith("model.layers") and int(name.split(".")[2]) >= self.config.num_hidden_layers:
                        continue
                else:
                    if not name.startswith(nextn_layer_prefix):
                        continue
                    if "shared_head.head" in name or "embed_tokens" in name:
                        continue
                    is_decoder = True
                    for weight_name in nextn_spec_weight_names:
                        if weight_name in name:
                            name = name.replace(nextn_layer_prefix, "model")
                            is_decoder = False
                            break
                    if is_decoder:
                        name = name.replace(nextn_layer_prefix, "model.decoder")
                if "rotary_emb.inv_freq" in name:
                    continue
                if self.use_fast_path:
                    continue
                for param_name, weight_name, shard_id in stacked_params_mapping:
                    if weight_name not in name:
                        continue
                    if "mlp.experts" in name:
                        continue
                    name = name.replace(weight_name, param_name)
                    if name not in params_dict:
                        continue
                    param = params_dict[name]
                    param.weight_loader(param, loaded_weight, shard_id)
                    break
                else:
                    for mapping in expert_params_mapping:
                        param_name, weight_name, expert_id, shard_id = mapping
                        if weight_name not in name:
                            continue
                        name = name.replace(weight_name, param_name)
                        if name not in params_dict:
                            continue
                        param = params_dict[name]
                        param.weight_loader(param, loaded_weight, name, shard_id=shard_id, expert_id=expert_id)
                        break
                    else:
                        if name not in params_dict:
                            continue
                        param = params_dict[name]
                        default_weight_loader(param, loaded_weight)
""")
NEXTN = textwrap.dedent("""
    from pkg.models.moe import MoeForCausalLM


    class MoeForCausalLMNextN(MoeForCausalLM):
        def load_weights(self, weights):
            super().load_weights(weights, is_nextn=True)
""")
CONFIG = {
    "architectures": ["MoeForCausalLM"],
    "num_hidden_layers": 2,
    "n_routed_experts": 2,
    "num_nextn_predict_layers": 1,
}


def _layer(p: str, shared: str | None = None) -> list[str]:
    names = [f"{p}.self_attn.{x}_proj.weight" for x in "qkvo"] + [f"{p}.mlp.gate.weight"]
    for owner in ["mlp.experts.0", "mlp.experts.1"]:
        names += [f"{p}.{owner}.{x}_proj.weight" for x in ("gate", "up", "down")]
    return names + [f"{shared or p + '.mlp.shared_experts'}.{x}_proj.weight" for x in ("gate", "up", "down")]


def checkpoint_names(shared_mtp: str | None = None) -> list[str]:
    names = ["model.embed_tokens.weight", "model.norm.weight", "lm_head.weight"]
    names += _layer("model.layers.0") + _layer("model.layers.1") + _layer("model.layers.2", shared_mtp)
    return names + [f"model.layers.2.{n}.weight" for n in ("enorm", "hnorm", "eh_proj", "shared_head.norm")]


def _params(p: str) -> set[str]:
    return {
        f"{p}.self_attn.qkv_proj.weight",
        f"{p}.self_attn.o_proj.weight",
        f"{p}.mlp.gate.weight",
        f"{p}.mlp.experts.w13_weight",
        f"{p}.mlp.experts.w2_weight",
        f"{p}.mlp.shared_experts.gate_up_proj.weight",
        f"{p}.mlp.shared_experts.down_proj.weight",
    }


MAIN = (
    {"model.embed_tokens.weight", "model.norm.weight", "lm_head.weight"}
    | _params("model.layers.0")
    | _params("model.layers.1")
)
DRAFT = (
    _params("model.decoder")
    | {f"model.{n}.weight" for n in ("enorm", "hnorm", "eh_proj", "shared_head.norm")}
    | {"model.embed_tokens.weight", "lm_head.weight"}
)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    models = tmp_path / "pkg" / "models"
    models.mkdir(parents=True)
    (models / "moe.py").write_text(BASE)
    (models / "moe_nextn.py").write_text(NEXTN)
    return tmp_path


def _ckpt(root: Path, names: list[str], config: dict) -> Checkpoint:
    return Checkpoint(root, {n: TensorInfo(n, "s.safetensors", "BF16", [1]) for n in names}, config=config)


def test_matching_names_load_every_param_of_target_and_draft(repo: Path):
    main = LoaderSim(repo, repo / "pkg/models/moe.py", "MoeForCausalLM", CONFIG, MAIN)
    draft = LoaderSim(repo, repo / "pkg/models/moe_nextn.py", "MoeForCausalLMNextN", CONFIG, DRAFT)
    names = checkpoint_names()
    assert {o.target for o in main.replay_all(names) if o.status == "loaded"} == MAIN
    loaded = {o.target for o in draft.replay_all(names) if o.status == "loaded"}
    assert loaded == DRAFT - {"model.embed_tokens.weight", "lm_head.weight"}
    assert not [o for o in draft.replay_all(names) if o.status in ("dropped", "keyerror")]


def test_run_time_flags_count_as_off_and_their_lines_are_reported(repo: Path):
    sim = LoaderSim(repo, repo / "pkg/models/moe.py", "MoeForCausalLM", CONFIG, MAIN)
    sim.replay("model.layers.0.self_attn.q_proj.weight")
    line = next(i for i, text in enumerate(BASE.splitlines(), 1) if "self.use_fast_path" in text)
    assert line in sim.assumed_false


def test_mtp_shared_experts_under_another_prefix_are_dropped_with_the_renames_that_did_it(repo: Path):
    ckpt = _ckpt(repo, checkpoint_names("model.layers.2.shared_experts"), CONFIG)
    answer = {
        "source": "model-class",
        "framework": "pkg",
        "params": {n: {} for n in MAIN},
        "draft_params": {n: {} for n in DRAFT},
    }
    result = check_framework(repo, ["pkg/models/*.py"], ckpt, answer)
    draft = next(m for m in result.models if m.cls == "MoeForCausalLMNextN")
    dropped = {o.name: o for o in draft.problems}
    gate = dropped["model.layers.2.shared_experts.gate_proj.weight"]
    assert gate.status == "dropped" and gate.target == "model.decoder.shared_experts.gate_up_proj.weight"
    assert [(a, b) for _, a, b in gate.rewrites] == [
        ("model.layers.2.shared_experts.gate_proj.weight", "model.decoder.shared_experts.gate_proj.weight"),
        ("model.decoder.shared_experts.gate_proj.weight", "model.decoder.shared_experts.gate_up_proj.weight"),
    ]
    assert draft.never_loaded == [
        "model.decoder.mlp.shared_experts.down_proj.weight",
        "model.decoder.mlp.shared_experts.gate_up_proj.weight",
    ]
    assert [(r.checkpoint, r.framework) for r in draft.fix] == [
        ("model.layers.2.shared_experts", "model.layers.2.mlp.shared_experts")
    ]
    assert (draft.loop_file, draft.loop_class) == ("pkg/models/moe.py", "MoeForCausalLM")

    # the weight-name rule's patch writer puts the fix into the loop; the same check then passes
    path = repo / draft.loop_file
    site = next(s for s in find_loader_sites(path.read_text()) if s.class_name == draft.loop_class)
    path.write_text(with_remap(path.read_text(), site, draft.fix, "MTP shared experts without mlp."))
    after = check_framework(repo, ["pkg/models/*.py"], ckpt, answer)
    assert after.ok, [(m.cls, m.problems, m.never_loaded) for m in after.models]


def test_blocked_construction_falls_back_to_the_static_replay_and_says_so(repo: Path):
    ckpt = _ckpt(repo, checkpoint_names(), CONFIG)
    blocked = {"source": "blocked", "framework": "pkg", "error": "RuntimeError: needs triton-cpu"}
    result = check_framework(repo, ["pkg/models/*.py"], ckpt, blocked)
    assert result.source.startswith("static replay") and result.blocked["error"].endswith("triton-cpu")
    assert [m.expected for m in result.models] == [None, None] and result.ok


def test_an_exclusion_list_in_checkpoint_names_misses_the_module_the_framework_checks(repo: Path):
    config = {
        **CONFIG,
        "quantization_config": {
            "quant_method": "fp8",
            "activation_scheme": "dynamic",
            "modules_to_not_convert": ["model.layers.2.mlp.shared_experts"],
        },
    }
    excl = read_exclusions(repo, config)
    assert excl is not None and excl.excludes("layers.2.mlp.shared_experts.gate_proj")  # `model.` optional
    renamed = {
        "model.layers.2.mlp.shared_experts.gate_proj.weight": "model.decoder.mlp.shared_experts.gate_up_proj.weight",
        "model.layers.1.mlp.shared_experts.gate_proj.weight": "model.layers.1.mlp.shared_experts.gate_up_proj.weight",
    }
    misses = exclusion_misses(excl, renamed, [("gate_up_proj", "gate_proj")])
    assert [(m.checkpoint_module, m.framework_prefix) for m in misses] == [
        ("model.layers.2.mlp.shared_experts.gate_proj", "model.decoder.mlp.shared_experts.gate_proj")
    ]


@pytest.mark.parametrize("globs", [["pkg/models/*.py"], ["pkg/models/moe_nextn.py"]])
def test_an_exclusion_miss_on_the_draft_is_judged_by_the_draft_class_even_when_it_is_the_only_one(
    repo: Path, globs: list[str]
):
    """Only the nextn file in the profile's globs: the draft is the one model checked, and its misses
    are still decided by the draft's quantized parameters (not the target's, which has no decoder)."""
    config = {
        **CONFIG,
        "quantization_config": {
            "quant_method": "fp8",
            "activation_scheme": "dynamic",
            "modules_to_not_convert": ["model.layers.2.mlp.shared_experts"],
        },
    }
    answer = {
        "source": "model-class",
        "framework": "pkg",
        "params": {n: {"dtype": "bfloat16"} for n in MAIN},
        "draft_params": {
            n: {"dtype": "float8_e4m3fn" if "shared_experts" in n else "bfloat16"} for n in DRAFT
        },
    }
    result = check_framework(repo, globs, _ckpt(repo, checkpoint_names(), config), answer)
    assert result.models[-1].cls == "MoeForCausalLMNextN"
    assert [(m.checkpoint_module, m.framework_prefix) for m in result.exclusion_misses] == [
        (f"model.layers.2.mlp.shared_experts.{x}_proj", f"model.decoder.mlp.shared_experts.{x}_proj")
        for x in ("gate", "up", "down")
    ]


def test_cli_without_a_framework_checkout_fails_in_one_line_before_building_anything(tmp_path: Path):
    import subprocess
    import sys

    from evals.weights_real.checkpoints import write_checkpoint

    ckpt = write_checkpoint(
        tmp_path / "ckpt",
        {"architectures": ["Glm4MoeForCausalLM"], "num_hidden_layers": 1},
        {"model.norm.weight": ("BF16", [8])},
        shards=1,
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "agent.cli",
            "weights",
            str(ckpt),
            "--profile",
            "sglang",
            "--repo",
            str(tmp_path),
            "--framework-python",
            "/nonexistent/python",
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert proc.returncode != 0
    assert proc.stderr.strip().splitlines() == [
        (
            f"rocport: error: {tmp_path}: no file matching python/sglang/srt/models/*.py defines Glm4MoeForCausalLM; "
            f"pass --repo with a checkout of the framework"
        )
    ]
