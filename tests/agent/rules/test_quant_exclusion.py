"""quant_exclusion: the GLM MTP shared-experts case on a real checkpoint and a real model file."""

from __future__ import annotations

import json

import pytest

from agent.proposers.rules import Workspace, propose_for
from agent.proposers.rules.quant_exclusion import QuantExclusionFixer, check_exclusions
from agent.proposers.rules.weight_names import WeightNameFixer
from tests.agent.rules.weights_fixture import MODEL_REL, profile, repo_files, run_load, write_checkpoint
from tools.diagnose import diagnose_text
from tools.patching import apply_diff
from tools.records import Failure

# Written in checkpoint names, like the GLM-5.2 config: the MTP head's modules under model.layers.2.
EXCLUDE = [
    "model.layers.0.mlp",
    "model.layers.1.mlp",
    "model.layers.2.mlp.experts",
    "model.layers.2.mlp.shared_experts",
]


def _diagnosed(repo, ckpt, kind: str) -> Failure:
    done = run_load(repo, ckpt)
    assert done.returncode != 0, done.stdout
    found = [f for f in diagnose_text(done.stderr, repo_root=repo, source="python") if f.kind == kind]
    assert found, done.stderr
    return found[0]


@pytest.fixture
def quant_case(git_repo, tmp_path):
    repo = git_repo(repo_files())
    ckpt = tmp_path / "ckpt"
    write_checkpoint(ckpt, exclude=EXCLUDE)
    return repo, ckpt, Workspace(root=repo, profile=profile(), checkpoint=ckpt)


def test_after_the_name_fix_the_shape_mismatch_is_fixed_in_the_model(quant_case):
    repo, ckpt, ws = quant_case
    names = WeightNameFixer().propose(_diagnosed(repo, ckpt, "weight_name"), ws)
    apply_diff(repo, names.diff)
    failure = _diagnosed(repo, ckpt, "quant_exclusion")  # shared experts built as MXFP4: half K
    assert failure.facts["shapes"][0][1] * 2 == failure.facts["shapes"][1][1]

    result = propose_for(failure, ws)
    assert len(result.proposals) == 1, result.declines
    proposal = result.proposals[0]
    assert proposal.files == [MODEL_REL]
    assert "+        quant_config = _with_framework_exclusions(quant_config)" in proposal.diff
    assert "_CHECKPOINT_NAME_REMAP = (" not in proposal.diff  # the loader's table is reused, not rewritten
    assert "model.layers.2.mlp.shared_experts -> model.mtp.mlp.shared_expert" in proposal.rationale
    assert check_exclusions(proposal, ws).ok
    assert QuantExclusionFixer().check(proposal, ws).ok  # what the agent loop calls

    apply_diff(repo, proposal.diff)
    done = run_load(repo, ckpt)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["missing"] == []
    assert QuantExclusionFixer().propose(failure, ws) is None  # idempotent


def test_without_a_loader_remap_one_patch_adds_table_and_hook(quant_case):
    repo, ckpt, ws = quant_case
    failure = Failure(
        kind="quant_exclusion",
        message="shape mismatch [64, 16] vs [64, 32]",
        file=MODEL_REL,
        facts={"shapes": [[64, 16], [64, 32]]},
    )
    proposal = QuantExclusionFixer().propose(failure, ws)
    assert '("model.layers.2.mlp.shared_experts.", "model.mtp.mlp.shared_expert."),' in proposal.diff
    assert "name = _remap_checkpoint_name(name)" in proposal.diff
    assert check_exclusions(proposal, ws).ok
    apply_diff(repo, proposal.diff)
    done = run_load(repo, ckpt)
    assert done.returncode == 0 and json.loads(done.stdout)["missing"] == [], done.stderr


def test_declines_without_exclusion_list(git_repo, tmp_path):
    repo = git_repo(repo_files())
    ckpt = tmp_path / "ckpt"
    write_checkpoint(ckpt)  # no quantization_config
    failure = Failure(kind="quant_exclusion", message="shape mismatch", file=MODEL_REL)
    result = propose_for(failure, Workspace(root=repo, profile=profile(), checkpoint=ckpt))
    assert result.proposals == [] and "no exclusion list" in result.declines[0]


def test_check_flags_exclusions_that_still_match_nothing(quant_case):
    _, _, ws = quant_case
    failure = Failure(kind="quant_exclusion", message="shape mismatch", file=MODEL_REL)
    proposal = QuantExclusionFixer().propose(failure, ws)
    proposal.diff = proposal.diff.replace('"model.mtp.mlp.shared_expert."', '"model.mtp.mlp.shared_xp."')
    check = check_exclusions(proposal, ws)
    assert not check.ok and "model.layers.2.mlp.shared_experts" in check.detail
