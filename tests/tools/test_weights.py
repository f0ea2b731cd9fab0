"""tools/weights: real safetensors files (single and sharded) written here, read from headers only."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

from tools.weights import (
    CheckpointError,
    PrefixRule,
    RemapError,
    check_rules,
    compare,
    derive_remap,
    load_checkpoint,
    load_expected,
    submodule_group,
)

LAYERS = 2  # decoder layers 0..1; the MTP head is stored as layer 2


def _mtp_checkpoint(root: Path) -> dict[str, np.ndarray]:
    """A GLM/DeepSeek-shaped sharded checkpoint: two decoder layers + MTP head as model.layers.2."""
    t: dict[str, np.ndarray] = {"model.embed_tokens.weight": np.zeros((32, 8), np.float16)}
    for i in range(LAYERS + 1):
        p = f"model.layers.{i}"
        t[f"{p}.self_attn.o_proj.weight"] = np.zeros((8, 8), np.float16)
        for owner in ("experts.0", "experts.1", "shared_experts"):
            t[f"{p}.mlp.{owner}.down_proj.weight"] = np.zeros((8, 16), np.float16)
    t[f"model.layers.{LAYERS}.enorm.weight"] = np.zeros((8,), np.float32)
    names = sorted(t)
    half = len(names) // 2
    shards = {
        "model-00001-of-00002.safetensors": names[:half],
        "model-00002-of-00002.safetensors": names[half:],
    }
    for fname, part in shards.items():
        save_file({n: t[n] for n in part}, str(root / fname))
    weight_map = {n: f for f, part in shards.items() for n in part}
    (root / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    (root / "config.json").write_text(json.dumps({"num_hidden_layers": LAYERS}))
    return t


def _expected(tensors: dict[str, np.ndarray]) -> dict[str, dict]:
    """The framework registers the MTP head as model.mtp.* and its shared expert singular."""
    out = {}
    for name, arr in tensors.items():
        name = name.replace(f"model.layers.{LAYERS}.mlp.shared_experts.", "model.mtp.mlp.shared_expert.")
        name = name.replace(f"model.layers.{LAYERS}.", "model.mtp.")
        out[name] = {"shape": list(arr.shape), "dtype": f"torch.{arr.dtype}"}
    return out


def test_sharded_checkpoint_names_shapes_dtypes(tmp_path):
    tensors = _mtp_checkpoint(tmp_path)
    ck = load_checkpoint(tmp_path)
    assert set(ck.tensors) == set(tensors)
    info = ck.tensors["model.layers.1.mlp.experts.0.down_proj.weight"]
    assert (info.dtype, info.shape) == ("F16", [8, 16])
    assert len(ck.shards) == 2 and ck.num_hidden_layers == LAYERS
    names_only = load_checkpoint(tmp_path / "model.safetensors.index.json", shapes=False)
    assert set(names_only.names) == set(tensors) and names_only.tensors[info.name].shape is None


def test_single_file_is_read_from_its_header_only(tmp_path):
    save_file({"a.weight": np.ones((3, 5), np.float32)}, str(tmp_path / "model.safetensors"))
    path = tmp_path / "model.safetensors"
    size = path.stat().st_size
    with path.open("r+b") as fh:  # drop the tensor bytes (a sparse hole of the same size): headers alone read
        fh.truncate(8 + struct.unpack("<Q", path.read_bytes()[:8])[0])
        fh.truncate(size)
    ck = load_checkpoint(tmp_path)
    assert ck.tensors["a.weight"].shape == [3, 5] and ck.tensors["a.weight"].dtype == "F32"


def test_mismatches_grouped_by_submodule_with_mtp_layer_distinct(tmp_path):
    tensors = _mtp_checkpoint(tmp_path)
    expected = _expected(tensors)
    expected["model.layers.0.self_attn.o_proj.weight"]["shape"] = [8, 4]
    report = compare(load_checkpoint(tmp_path), expected)
    assert not report.ok
    assert "model.mtp.mlp.shared_expert.down_proj.weight" in report.missing
    assert "model.layers.2.mlp.shared_experts.down_proj.weight" in report.unexpected
    assert [m.name for m in report.mismatched] == ["model.layers.0.self_attn.o_proj.weight"]
    groups = {g.group: g for g in report.groups}
    assert "model.layers.2.mlp.shared_experts" in groups  # the MTP layer is not folded into layers.*
    assert "model.layers.*.self_attn" in groups
    assert len(groups["model.layers.2.mlp.experts.*"].unexpected) == 2


def test_dtype_spellings_compare_equal(tmp_path):
    tensors = _mtp_checkpoint(tmp_path)
    expected = {n: {"shape": list(a.shape), "dtype": f"torch.{a.dtype}"} for n, a in tensors.items()}
    assert compare(load_checkpoint(tmp_path), expected).ok
    expected["model.embed_tokens.weight"]["dtype"] = "bfloat16"
    assert compare(load_checkpoint(tmp_path), expected).mismatched[0].expected_dtype == "bfloat16"


def test_group_collapses_layer_and_expert_indices():
    assert (
        submodule_group("model.layers.17.mlp.experts.200.down_proj.weight", 61)
        == "model.layers.*.mlp.experts.*"
    )
    assert (
        submodule_group("model.layers.61.mlp.shared_experts.up_proj.weight", 61)
        == "model.layers.61.mlp.shared_experts"
    )
    assert submodule_group("lm_head.weight", 61) == "lm_head"


def test_remap_from_real_checkpoint_names(tmp_path):
    tensors = _mtp_checkpoint(tmp_path)
    remap = derive_remap(load_checkpoint(tmp_path, shapes=False).names, _expected(tensors))
    assert [(r.checkpoint, r.framework) for r in remap.rules] == [
        ("model.layers.2.mlp.shared_experts", "model.mtp.mlp.shared_expert"),
        ("model.layers.2", "model.mtp"),
    ]


def _claim(path, end) -> None:
    """Rewrite the shard's header so its first tensor claims data up to `end`; the data stays as it was."""
    raw = path.read_bytes()
    (size,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + size])
    name = next(n for n in header if n != "__metadata__")
    header[name]["data_offsets"] = [0, end]
    text = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text)) + text + raw[8 + size :])


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda p: p.write_bytes(b"\x05\x00"), "truncated safetensors file"),
        (lambda p: p.write_bytes(struct.pack("<Q", 500) + b"{}"), "truncated header"),
        (lambda p: p.write_bytes(struct.pack("<Q", 9) + b"{not json"), "not valid JSON"),
        (lambda p: _claim(p, 10**15), "ends at byte 1000000000000000"),
        (lambda p: _claim(p, "x"), "no [begin, end] data_offsets"),
    ],
)
def test_corrupt_shard_is_one_line_naming_the_file(tmp_path, damage, message):
    _mtp_checkpoint(tmp_path)
    shard = tmp_path / "model-00002-of-00002.safetensors"
    damage(shard)
    with pytest.raises(CheckpointError) as err:
        load_checkpoint(tmp_path)
    assert message in str(err.value) and shard.name in str(err.value) and "\n" not in str(err.value)


def test_index_naming_a_missing_shard(tmp_path):
    _mtp_checkpoint(tmp_path)
    (tmp_path / "model-00001-of-00002.safetensors").unlink()
    with pytest.raises(CheckpointError, match=r"model-00001-of-00002.safetensors which is not in"):
        load_checkpoint(tmp_path, shapes=False)


def test_expected_file_forms(tmp_path):
    (tmp_path / "list.json").write_text(json.dumps(["a.weight"]))
    (tmp_path / "bad.json").write_text(json.dumps({"a.weight": 3}))
    assert load_expected(tmp_path / "list.json") == {"a.weight": {}}
    with pytest.raises(CheckpointError, match="list of names"):
        load_expected(tmp_path / "bad.json")


def _cli(*args: str) -> subprocess.CompletedProcess:
    """The real `rocport` entry point in a subprocess."""
    code = "import sys; from agent.cli import main; sys.argv[0] = 'rocport'; main()"
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=Path(__file__).resolve().parents[2],
    )


def test_cli_reports_remap_worthy_mismatch_as_json_and_table(tmp_path):
    (tmp_path / "ckpt").mkdir()
    tensors = _mtp_checkpoint(tmp_path / "ckpt")
    (tmp_path / "expected.json").write_text(json.dumps(_expected(tensors)))
    out = _cli("weights", str(tmp_path / "ckpt"), "--expected", str(tmp_path / "expected.json"), "--json")
    assert out.returncode == 1, out.stderr
    data = json.loads(out.stdout)
    assert data["tensors"] == len(tensors) and data["shards"] == 2
    assert data["remap"]["rules"][0] == ["model.layers.2.mlp.shared_experts", "model.mtp.mlp.shared_expert"]
    table = _cli("weights", str(tmp_path / "ckpt"), "--expected", str(tmp_path / "expected.json"))
    assert "model.layers.2.mlp.shared_experts" in table.stdout and "prefix remap" in table.stdout


def test_cli_bad_checkpoint_is_one_line_error(tmp_path):
    out = _cli("weights", str(tmp_path / "nope"))
    assert out.returncode == 2 and out.stderr.startswith("rocport: error:") and "Traceback" not in out.stderr


def test_cli_expected_params_from_the_tinyserve_profile_hook(tmp_path):
    fixture = Path(__file__).resolve().parents[2] / "evals/frameworks/tinyserve"
    ckpt = tmp_path / "ckpt"
    subprocess.run(
        [sys.executable, "-m", "tinyserve.make_checkpoint", "--out", str(ckpt), "--quant", "mxfp4"],
        cwd=fixture,
        check=True,
        capture_output=True,
    )
    out = _cli(
        "weights",
        str(ckpt),
        "--profile",
        "tinyserve",
        "--repo",
        str(fixture),
        "--model-file",
        str(fixture / "tinyserve/models/glm_moe.py"),
        "--json",
    )
    assert out.returncode == 1, out.stderr  # raw names differ: the MTP head is stored as layer 2
    data = json.loads(out.stdout)
    groups = {g["group"] for g in data["report"]["groups"]}
    assert {"model.layers.2.mlp.shared_experts", "model.mtp.shared_experts"} <= groups
    assert ["model.layers.2.mlp.shared_experts", "model.mtp.shared_experts"] in data["remap"]["rules"]
    bad = _cli("weights", str(ckpt), "--profile", "nope", "--repo", str(fixture))
    assert bad.returncode == 2 and "no profile 'nope'" in bad.stderr


STACKED = [("qkv_proj", "q_proj"), ("qkv_proj", "k_proj"), ("qkv_proj", "v_proj")]


def test_remap_through_stacked_mapping_and_only_unmatched_names():
    ckpt = [
        f"model.layers.{i}.self_attn.{p}.weight" for i in range(3) for p in ("q_proj", "k_proj", "v_proj")
    ]
    expected = [f"model.layers.{i}.self_attn.qkv_proj.weight" for i in range(2)] + [
        "model.mtp.self_attn.qkv_proj.weight"
    ]
    remap = derive_remap(ckpt, expected, STACKED)
    assert [(r.checkpoint, r.framework) for r in remap.rules] == [("model.layers.2", "model.mtp")]
    assert sorted(remap.renamed) == [
        f"model.layers.2.self_attn.{p}.weight" for p in ("k_proj", "q_proj", "v_proj")
    ]


def test_remap_declines_ambiguous_and_non_renames():
    with pytest.raises(RemapError, match="ambiguous") as err:
        derive_remap(["a.x.weight", "b.x.weight"], ["c.x.weight", "d.x.weight"])
    assert err.value.ambiguous
    with pytest.raises(RemapError, match="share no name suffix"):
        derive_remap(["a.x.weight", "a.extra.bias"], ["c.x.weight"])


def test_remap_resolves_ties_by_the_smallest_table():
    # x alone is a tie (a.x or b.x -> c.x or d.x); a.y -> c.y fixes a -> c, so b -> d
    remap = derive_remap(
        ["a.x.weight", "b.x.weight", "a.y.weight"], ["c.x.weight", "d.x.weight", "c.y.weight"]
    )
    assert [(r.checkpoint, r.framework) for r in remap.rules] == [("a", "c"), ("b", "d")]


def test_remap_rules_check_reports_what_is_left():
    rules = [PrefixRule("model.layers.2", "model.mtp")]
    problems = check_rules(
        rules, ["model.layers.2.a.weight", "model.layers.2.b.weight"], ["model.mtp.a.weight"]
    )
    assert problems == ["1 checkpoint tensors not consumed (e.g. model.layers.2.b.weight)"]


def test_remap_stops_early_on_a_tie_too_large_to_be_a_rename():
    # every gate_proj vs every gate_up_proj (the loader's fused mapping not given): no prefix rename
    ckpt = [f"model.layers.{i}.mlp.gate_proj.weight" for i in range(70)]
    expected = [f"model.layers.{i}.mlp.gate_up_proj.weight" for i in range(70)]
    with pytest.raises(RemapError, match=r"pair only through the suffix 'weight'.*stacked/fused mapping"):
        derive_remap(ckpt, expected)


LOADER_SRC = """import dataclasses

_CHECKPOINT_NAME_REMAP = (
    ("model.layers.61.", "model.mtp."),
    ("model.layers.61.mlp.shared_experts.", "model.mtp.mlp.shared_expert."),
)


class Helper:
    def load_weights(self, weights):
        return None


@dataclasses.dataclass
class GlmForCausalLM:
    def load_weights(self, weights):
        stacked_params_mapping = [
            (".qkv_proj", ".q_proj", "q"),
            (".gate_up_proj", ".gate_proj", 0),
        ]
        expert_params_mapping = make_mapping()  # built at run time: not readable
        for tensor_name, loaded_weight in weights:
            if "rotary_emb.inv_freq" in tensor_name:
                continue
            pass
"""


def test_loader_source_reads_the_sglang_shape_without_importing():
    from tools.weights.loader_source import find_loader_sites, read_remap_table

    (site,) = find_loader_sites(LOADER_SRC)  # Helper.load_weights has no name loop
    assert site.class_name == "GlmForCausalLM" and LOADER_SRC.splitlines()[site.class_start - 1].startswith(
        "@"
    )
    assert site.name_var == "tensor_name" and site.skip == ["rotary_emb.inv_freq"]
    assert site.mappings == [(".qkv_proj", ".q_proj"), (".gate_up_proj", ".gate_proj")]
    assert site.runtime_mappings == ["expert_params_mapping"]
    assert LOADER_SRC.splitlines()[site.body_line - 1].strip().startswith("if ")
    rules = read_remap_table(LOADER_SRC)  # file order, as the loader applies it: first match wins
    assert [r.checkpoint for r in rules] == ["model.layers.61", "model.layers.61.mlp.shared_experts"]
    name = "model.layers.61.mlp.shared_experts.down_proj.weight"
    problems = check_rules(rules, [name], ["model.mtp.mlp.shared_expert.down_proj.weight"])
    assert problems and "not consumed" in problems[1]  # the general prefix shadows the specific one
    assert read_remap_table("x = 1\n") is None


def test_remap_with_names_that_sort_between_a_module_and_its_children():
    # "layers.1-b" sorts between "layers.1" and "layers.1.x": the name tree must still see both
    ckpt = ["m.layers.1.x.weight", "m.layers.1-b.x.weight", "m.layers.2.x.weight", "m.layers.2.y.weight"]
    expected = ["m.layers.1.x.weight", "m.layers.1-b.x.weight", "m.mtp.x.weight", "m.mtp.y.weight"]
    assert [(r.checkpoint, r.framework) for r in derive_remap(ckpt, expected).rules] == [
        ("m.layers.2", "m.mtp")
    ]
