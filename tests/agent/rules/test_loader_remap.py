"""A loader that already renames through its own table: the fix adds the missing entries to that table.

The model file here is real Python that the test runs after patching: its load_weights renames every
tensor of a real checkpoint (weights_fixture) through the patched table and loads it by name.
"""

from __future__ import annotations

import json
import subprocess
import sys

from agent.proposers.rules import Workspace, propose_for
from agent.proposers.rules.weight_names import WeightNameFixer, check_remap
from tests.agent.rules.weights_fixture import NUM_LAYERS, write_checkpoint
from tools.patching import apply_diff
from tools.records import Failure

MODEL_REL = "models/tiny_moe.py"
MODEL = '''"""Tiny MoE whose MTP head (checkpoint layer N) is registered as model.mtp.*."""

HEAD_PARTS = (
    ("enorm", "enorm"),
    ("hnorm", "hnorm"),
    ("mlp", "block.mlp"),
    ("eh_proj", "eh_proj"),
)


class TinyMoeForCausalLM:
    def __init__(self, config=None, quant_config=None, params=()):
        self.config = config or {"num_hidden_layers": NUM_LAYERS}
        self.params = dict.fromkeys(params)

    def named_parameters(self):
        return iter(self.params.items())

    def remap_checkpoint_name(self, name):
        head = f"model.layers.{self.config['num_hidden_layers']}."
        if not name.startswith(head):
            return name
        rest = name[len(head):]
        for old, new in HEAD_PARTS:
            if rest.startswith(old + "."):
                return f"model.mtp.{new}{rest[len(old):]}"
        return f"model.mtp.block.{rest}"

    def load_weights(self, weights):
        stacked_params_mapping = [
            ("qkv_proj", "q_proj", "q"),
            ("qkv_proj", "k_proj", "k"),
            ("qkv_proj", "v_proj", "v"),
            ("gate_up_proj", "gate_proj", 0),
            ("gate_up_proj", "up_proj", 1),
        ]
        params_dict = dict(self.named_parameters())
        loaded = set()
        for name, loaded_weight in weights:
            if "rotary_emb.inv_freq" in name:
                continue
            name = self.remap_checkpoint_name(name)
            for param_name, shard_name, shard_id in stacked_params_mapping:
                if shard_name in name:
                    name = name.replace(shard_name, param_name)
                    break
            params_dict[name]  # KeyError: the name is not a registered param
            loaded.add(name)
        return loaded
'''.replace("NUM_LAYERS", str(NUM_LAYERS))

# Loads the checkpoint's names (index only) through the repo's model; prints what it loaded.
LOAD = """import json, sys
sys.path.insert(0, ".")
from models.tiny_moe import TinyMoeForCausalLM
names = json.load(open(sys.argv[1] + "/model.safetensors.index.json"))["weight_map"]
model = TinyMoeForCausalLM(params=json.load(open(sys.argv[2])))
print(json.dumps(sorted(model.load_weights((n, None) for n in names))))
"""

STACKED = (
    ("q_proj", "qkv_proj"),
    ("k_proj", "qkv_proj"),
    ("v_proj", "qkv_proj"),
    ("gate_proj", "gate_up_proj"),
    ("up_proj", "gate_up_proj"),
)


def registered(name: str, shared: str) -> str:
    """Where the framework registers a checkpoint tensor: head parts at model.mtp, the rest in its block."""
    mtp = f"model.layers.{NUM_LAYERS}."
    if name.startswith(mtp):
        rest = name[len(mtp) :]
        head = ("enorm.", "hnorm.", "eh_proj.", "shared_head.")
        name = (
            "model.mtp." + rest
            if rest.startswith(head)
            else shared + rest[len("mlp.shared_experts") :]
            if rest.startswith("mlp.shared_experts.")
            else "model.mtp.block." + rest
        )
    for shard, param in STACKED:
        if shard in name:
            return name.replace(shard, param)
    return name


def _case(git_repo, tmp_path, shared: str = "model.mtp.shared_experts"):
    repo = git_repo({MODEL_REL: MODEL, "models/__init__.py": "", "load.py": LOAD})
    ckpt = tmp_path / "ckpt"
    names = [n for n in write_checkpoint(ckpt) if "rotary_emb" not in n]
    expected = {registered(n, shared): {} for n in names}
    (tmp_path / "expected.json").write_text(json.dumps(sorted(expected)))
    failure = Failure(
        kind="weight_name",
        message="KeyError",
        file=MODEL_REL,
        symbol="model.mtp.block.mlp.shared_experts.gate_up_proj.weight",
    )
    return repo, ckpt, Workspace(root=repo, checkpoint=ckpt, expected_params=expected), failure


def _load(repo, ckpt, tmp_path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "load.py", str(ckpt), str(tmp_path / "expected.json")],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def test_missing_entries_go_into_the_loaders_table_specific_before_general(git_repo, tmp_path):
    repo, ckpt, ws, failure = _case(git_repo, tmp_path)
    assert "KeyError" in _load(repo, ckpt, tmp_path).stderr
    proposal = WeightNameFixer().propose(failure, ws)
    added = [
        line for line in proposal.diff.splitlines() if line.startswith("+") and not line.startswith("+++")
    ]
    assert added == ['+    ("mlp.shared_experts", "shared_experts"),', '+    ("shared_head", "shared_head"),']
    assert not [
        line for line in proposal.diff.splitlines() if line.startswith("-") and not line.startswith("---")
    ]
    # shared_experts before ("mlp", ...), which would take it first
    table = proposal.diff.split("HEAD_PARTS = (")[1]
    assert table.index('"mlp.shared_experts"') < table.index('("mlp", "block.mlp")')
    assert "HEAD_PARTS" in proposal.rationale and "remap_checkpoint_name" in proposal.rationale
    check = check_remap(proposal, ws)
    assert check.ok, check.detail

    apply_diff(repo, proposal.diff)
    done = _load(repo, ckpt, tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == sorted(ws.expected_params)
    assert WeightNameFixer().propose(failure, ws) is None  # idempotent


def test_check_replays_the_patched_table_and_rejects_a_wrong_entry(git_repo, tmp_path):
    _, _, ws, failure = _case(git_repo, tmp_path)
    proposal = WeightNameFixer().propose(failure, ws)
    proposal.diff = proposal.diff.replace('"shared_experts"),', '"shared_expert"),')
    check = check_remap(proposal, ws)
    assert not check.ok and "expected params not loaded" in check.detail


def test_a_remap_outside_the_tables_pattern_gets_a_table_of_its_own(git_repo, tmp_path):
    shared = "model.heads.shared_experts"  # registered outside model.mtp.*: no entry of HEAD_PARTS fits
    repo, ckpt, ws, failure = _case(git_repo, tmp_path, shared)
    result = propose_for(failure, ws)
    assert len(result.proposals) == 1, result.declines
    proposal = result.proposals[0]
    assert "_CHECKPOINT_NAME_REMAP = (" in proposal.diff
    assert f'("model.layers.{NUM_LAYERS}.mlp.shared_experts.", "{shared}."),' in proposal.diff
    assert check_remap(proposal, ws).ok
    apply_diff(repo, proposal.diff)
    done = _load(repo, ckpt, tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == sorted(ws.expected_params)
