"""A tiny sglang-shaped MoE model file with an MTP head (numpy, no torch) and its real checkpoint.

The checkpoint stores the MTP head as decoder layer NUM_LAYERS (GLM/DeepSeek layout); the model
registers it under other prefixes, so loading fails until the names are remapped. `run_load` imports
the model file from the repo in a fresh interpreter and loads every shard, as a server would.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file

from agent.profiles import BuildSpec, LaunchSpec, Profile

NUM_LAYERS, HIDDEN, INTER, EXPERTS, VOCAB = 2, 64, 32, 2, 16
MODEL_REL = "models/tiny_moe.py"

MODEL = '''"""Tiny MoE model with an MTP head, loaded the sglang way (numpy stands in for torch)."""
import numpy as np

NUM_LAYERS, HIDDEN, INTER, EXPERTS, VOCAB = {NUM_LAYERS}, {HIDDEN}, {INTER}, {EXPERTS}, {VOCAB}
MTP_DECODER, MTP_HEAD, SHARED = "{decoder}", "{head}", "{shared}"
HEAD_NORMS = {head_norms}


class Param:
    """A parameter; fused ones take their shards by id."""

    def __init__(self, shape, shards=None, quantized=False):
        self.shape = tuple(shape)
        self.data = np.zeros(self.shape, np.float32)
        self.shards = shards or {{}}
        self.loaded = set()

    def weight_loader(self, param, loaded_weight, shard_id=None):
        rows = slice(None) if shard_id is None else self.shards[shard_id]
        if param.data[rows].shape != loaded_weight.shape:
            raise ValueError(f"shape mismatch {{list(param.data[rows].shape)}} vs {{list(loaded_weight.shape)}}")
        param.data[rows] = loaded_weight
        param.loaded.add(shard_id)


class TinyMoeForCausalLM:
    def __init__(self, config=None, quant_config=None):
        self.quant_config = quant_config
        self.params = {{}}
        self.add("model.embed_tokens.weight", (VOCAB, HIDDEN))
        self.add("model.norm.weight", (HIDDEN,))
        self.add("lm_head.weight", (VOCAB, HIDDEN))
        for i in range(NUM_LAYERS):
            self.add_layer(f"model.layers.{{i}}", "shared_experts")
        self.add_layer(MTP_DECODER, SHARED)
        for norm in HEAD_NORMS:
            self.add(f"{{MTP_HEAD}}.{{norm}}.weight", (HIDDEN,))
        self.add(f"{{MTP_HEAD}}.eh_proj.weight", (HIDDEN, 2 * HIDDEN))
        self.add(f"{{MTP_HEAD}}.shared_head.norm.weight", (HIDDEN,))

    def add(self, name, shape, shards=None, module=None):
        excluded = self.quant_config is not None and self.quant_config.is_excluded(module or "")
        if module is not None and self.quant_config is not None and not excluded:
            shape = (shape[0], shape[1] // 2)  # MXFP4: two values per byte
            shards = {{k: v for k, v in (shards or {{}}).items()}}
        self.params[name] = Param(shape, shards)

    def add_mlp(self, prefix):
        self.add(f"{{prefix}}.gate_up_proj.weight", (2 * INTER, HIDDEN),
                 {{0: slice(0, INTER), 1: slice(INTER, 2 * INTER)}}, module=prefix)
        self.add(f"{{prefix}}.down_proj.weight", (HIDDEN, INTER), module=prefix)

    def add_layer(self, prefix, shared):
        self.add(f"{{prefix}}.input_layernorm.weight", (HIDDEN,))
        self.add(f"{{prefix}}.post_attention_layernorm.weight", (HIDDEN,))
        third = {{"q": slice(0, HIDDEN), "k": slice(HIDDEN, 2 * HIDDEN), "v": slice(2 * HIDDEN, 3 * HIDDEN)}}
        self.add(f"{{prefix}}.self_attn.qkv_proj.weight", (3 * HIDDEN, HIDDEN), third)
        self.add(f"{{prefix}}.self_attn.o_proj.weight", (HIDDEN, HIDDEN))
        self.add(f"{{prefix}}.mlp.gate.weight", (EXPERTS, HIDDEN))
        for e in range(EXPERTS):
            self.add_mlp(f"{{prefix}}.mlp.experts.{{e}}")
        self.add_mlp(f"{{prefix}}.mlp.{{shared}}")

    def named_parameters(self):
        return iter(self.params.items())

    def load_weights(self, weights):
        stacked_params_mapping = [
            # (param_name, shard_name, shard_id)
            ("qkv_proj", "q_proj", "q"),
            ("qkv_proj", "k_proj", "k"),
            ("qkv_proj", "v_proj", "v"),
            ("gate_up_proj", "gate_proj", 0),
            ("gate_up_proj", "up_proj", 1),
        ]
        params_dict = dict(self.named_parameters())
        for name, loaded_weight in weights:
            if "rotary_emb.inv_freq" in name:
                continue
            for param_name, weight_name, shard_id in stacked_params_mapping:
                if weight_name not in name:
                    continue
                name = name.replace(weight_name, param_name)
                param = params_dict[name]
                param.weight_loader(param, loaded_weight, shard_id)
                break
            else:
                param = params_dict[name]
                param.weight_loader(param, loaded_weight)
'''

QUANT = '''"""MXFP4 config: modules named in modules_to_not_convert stay full width."""


class Mxfp4Config:
    def __init__(self, modules_to_not_convert):
        self.modules_to_not_convert = list(modules_to_not_convert)

    def is_excluded(self, prefix):
        return any(prefix == m or prefix.startswith(m + ".") for m in self.modules_to_not_convert)
'''

# Loads every shard of the checkpoint into the model, as the server would; prints what it loaded.
LOADER = """import json, sys
from pathlib import Path
from safetensors.numpy import load_file
sys.path.insert(0, ".")
from models.tiny_moe import TinyMoeForCausalLM
from models.quant import Mxfp4Config

ckpt = Path(sys.argv[1])
config = json.loads((ckpt / "config.json").read_text())
qc = config.get("quantization_config")
model = TinyMoeForCausalLM(config, Mxfp4Config(qc["modules_to_not_convert"]) if qc else None)
weight_map = json.loads((ckpt / "model.safetensors.index.json").read_text())["weight_map"]
def weights():
    for shard in sorted(set(weight_map.values())):
        yield from load_file(str(ckpt / shard)).items()
model.load_weights(weights())
missing = [n for n, p in model.params.items() if len(p.loaded) != max(1, len(p.shards))]
print(json.dumps({"params": len(model.params), "missing": missing,
                  "checksum": {n: float(p.data.sum()) for n, p in model.params.items()}}))
"""

# Prints the framework's expected parameters, as a profile's expected_params hook does.
EXPECTED = """import json, sys
sys.path.insert(0, ".")
from models.tiny_moe import TinyMoeForCausalLM
print(json.dumps({n: {"shape": list(p.shape), "dtype": "float32"} for n, p in TinyMoeForCausalLM().named_parameters()}))
"""


def profile() -> Profile:
    """A framework profile for the tiny repo: expected params from its hook, loaders under models/."""
    return Profile(
        name="tiny",
        build=BuildSpec(rocm="true"),
        launch=LaunchSpec(command="serve {port}"),
        expected_params="python3 expected_params.py {model_path}",
        model_loaders=["models/*.py"],
    )


def model_source(
    decoder: str = "model.mtp",
    head: str = "model.mtp",
    shared: str = "shared_expert",
    head_norms: tuple[str, ...] = ("enorm", "hnorm"),
) -> str:
    return MODEL.format(
        NUM_LAYERS=NUM_LAYERS,
        HIDDEN=HIDDEN,
        INTER=INTER,
        EXPERTS=EXPERTS,
        VOCAB=VOCAB,
        decoder=decoder,
        head=head,
        shared=shared,
        head_norms=repr(tuple(head_norms)),
    )


def repo_files(**layout) -> dict[str, str]:
    return {
        MODEL_REL: model_source(**layout),
        "models/__init__.py": "",
        "models/quant.py": QUANT,
        "load_checkpoint.py": LOADER,
        "expected_params.py": EXPECTED,
    }


def _checkpoint_tensors() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    t: dict[str, np.ndarray] = {}

    def add(name, shape):
        t[name] = rng.standard_normal(shape).astype(np.float32)

    add("model.embed_tokens.weight", (VOCAB, HIDDEN))
    add("model.norm.weight", (HIDDEN,))
    add("lm_head.weight", (VOCAB, HIDDEN))
    for i in range(NUM_LAYERS + 1):  # layer NUM_LAYERS is the MTP head
        p = f"model.layers.{i}"
        for n in ("input_layernorm", "post_attention_layernorm"):
            add(f"{p}.{n}.weight", (HIDDEN,))
        for n in ("q_proj", "k_proj", "v_proj", "o_proj"):
            add(f"{p}.self_attn.{n}.weight", (HIDDEN, HIDDEN))
        add(f"{p}.self_attn.rotary_emb.inv_freq", (HIDDEN // 2,))
        add(f"{p}.mlp.gate.weight", (EXPERTS, HIDDEN))
        for owner in [f"experts.{e}" for e in range(EXPERTS)] + ["shared_experts"]:
            add(f"{p}.mlp.{owner}.gate_proj.weight", (INTER, HIDDEN))
            add(f"{p}.mlp.{owner}.up_proj.weight", (INTER, HIDDEN))
            add(f"{p}.mlp.{owner}.down_proj.weight", (HIDDEN, INTER))
    mtp = f"model.layers.{NUM_LAYERS}"
    add(f"{mtp}.enorm.weight", (HIDDEN,))
    add(f"{mtp}.hnorm.weight", (HIDDEN,))
    add(f"{mtp}.eh_proj.weight", (HIDDEN, 2 * HIDDEN))
    add(f"{mtp}.shared_head.norm.weight", (HIDDEN,))
    return t


def write_checkpoint(root: Path, exclude: list[str] | None = None) -> dict[str, np.ndarray]:
    """Two shards + index + config.json; `exclude` adds an MXFP4 quantization_config with that list."""
    root.mkdir(parents=True, exist_ok=True)
    t = _checkpoint_tensors()
    names = sorted(t)
    shards = {"model-00001-of-00002.safetensors": names[::2], "model-00002-of-00002.safetensors": names[1::2]}
    for fname, part in shards.items():
        save_file({n: t[n] for n in part}, str(root / fname))
    weight_map = {n: f for f, part in shards.items() for n in part}
    (root / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    config: dict = {"architectures": ["TinyMoeForCausalLM"], "num_hidden_layers": NUM_LAYERS}
    if exclude is not None:
        config["quantization_config"] = {"quant_method": "mxfp4", "modules_to_not_convert": exclude}
    (root / "config.json").write_text(json.dumps(config))
    return t


def run_load(repo: Path, ckpt: Path) -> subprocess.CompletedProcess:
    """Load the checkpoint through the repo's (possibly patched) load_weights in a fresh interpreter."""
    return subprocess.run(
        [sys.executable, "load_checkpoint.py", str(ckpt)],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
