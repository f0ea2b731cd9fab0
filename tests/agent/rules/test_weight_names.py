"""weight_names: a real checkpoint, a real sglang-shaped model file, the patched load_weights executed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent.profiles import load_profile
from agent.proposers.rules import Workspace, propose_for
from agent.proposers.rules.quant_exclusion import QuantExclusionFixer
from agent.proposers.rules.weight_names import WeightNameFixer, check_remap
from evals.taskdefs import load_task, materialize
from tests.agent.rules.weights_fixture import MODEL_REL, profile, repo_files, run_load, write_checkpoint
from tools.diagnose import diagnose_text
from tools.patching import apply_diff
from tools.records import Failure


def _load_failure(repo, ckpt) -> Failure:
    """Run the real load and diagnose its traceback, as the agent does with a server log."""
    done = run_load(repo, ckpt)
    assert done.returncode != 0
    failures = [
        f for f in diagnose_text(done.stderr, repo_root=repo, source="python") if f.kind == "weight_name"
    ]
    assert failures, done.stderr
    return failures[0]


@pytest.fixture
def mtp_case(git_repo, tmp_path):
    repo = git_repo(repo_files())
    ckpt = tmp_path / "ckpt"
    tensors = write_checkpoint(ckpt)
    return repo, ckpt, tensors


def test_mtp_shared_experts_remap_loads_every_param(mtp_case):
    repo, ckpt, tensors = mtp_case
    failure = _load_failure(repo, ckpt)
    assert failure.symbol.startswith("model.layers.2.")
    ws = Workspace(root=repo, profile=profile(), checkpoint=ckpt)  # expected params from the profile hook
    result = propose_for(failure, ws)
    assert len(result.proposals) == 1, result.declines
    proposal = result.proposals[0]
    assert proposal.files == [MODEL_REL]
    assert '("model.layers.2.mlp.shared_experts.", "model.mtp.mlp.shared_expert."),' in proposal.diff
    assert '("model.layers.2.", "model.mtp."),' in proposal.diff
    assert "+            name = _remap_checkpoint_name(name)" in proposal.diff
    check = WeightNameFixer().check(proposal, ws)  # what the agent loop calls: check_remap
    assert check.ok and check.detail.endswith("58 checkpoint tensors -> all 40 expected params"), check.detail

    apply_diff(repo, proposal.diff)
    done = run_load(repo, ckpt)
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout)
    assert loaded["missing"] == []
    # the MTP shared expert's down_proj holds the checkpoint's tensor, not zeros
    want = float(tensors["model.layers.2.mlp.shared_experts.down_proj.weight"].sum())
    assert loaded["checksum"]["model.mtp.mlp.shared_expert.down_proj.weight"] == pytest.approx(want, rel=1e-5)

    assert WeightNameFixer().propose(failure, ws) is None  # idempotent: a second run proposes nothing


def test_head_tensors_and_decoder_tensors_remapped_separately(git_repo, tmp_path):
    # DeepSeek-style: the MTP decoder layer as model.decoder.*, head tensors (enorm, eh_proj...) at model.*
    repo = git_repo(repo_files(decoder="model.decoder", head="model", shared="shared_experts"))
    ckpt = tmp_path / "ckpt"
    write_checkpoint(ckpt)
    failure = _load_failure(repo, ckpt)
    ws = Workspace(root=repo, profile=profile(), checkpoint=ckpt)
    proposal = WeightNameFixer().propose(failure, ws)
    assert '("model.layers.2.", "model.decoder."),' in proposal.diff
    for head in ("enorm", "hnorm", "eh_proj", "shared_head"):
        assert f'("model.layers.2.{head}.", "model.{head}."),' in proposal.diff
    apply_diff(repo, proposal.diff)
    done = run_load(repo, ckpt)
    assert done.returncode == 0 and json.loads(done.stdout)["missing"] == [], done.stderr


def test_ambiguous_remap_declines_with_reason(git_repo, tmp_path):
    # two head norms registered as norm_a/norm_b: enorm and hnorm fit either way
    repo = git_repo(repo_files(head_norms=("norm_a", "norm_b")))
    ckpt = tmp_path / "ckpt"
    write_checkpoint(ckpt)
    result = propose_for(_load_failure(repo, ckpt), Workspace(root=repo, profile=profile(), checkpoint=ckpt))
    assert result.proposals == []
    assert any("ambiguous" in d and "enorm" in d for d in result.declines), result.declines


def test_no_checkpoint_or_expected_params_declines(mtp_case):
    repo, ckpt, _ = mtp_case
    failure = Failure(
        kind="weight_name",
        message="KeyError",
        file=MODEL_REL,
        symbol="model.layers.2.mlp.shared_experts.down_proj.weight",
    )
    result = propose_for(failure, Workspace(root=repo))
    assert result.proposals == [] and "no checkpoint" in result.declines[0]
    result = propose_for(failure, Workspace(root=repo, checkpoint=ckpt))
    assert "no expected parameter names" in result.declines[0]


def test_check_rejects_a_remap_that_drops_tensors(mtp_case):
    repo, ckpt, _ = mtp_case
    failure = _load_failure(repo, ckpt)
    ws = Workspace(root=repo, profile=profile(), checkpoint=ckpt)
    proposal = WeightNameFixer().propose(failure, ws)
    proposal.diff = proposal.diff.replace('"model.mtp.mlp.shared_expert."', '"model.mtp.mlp.shared_experts."')
    check = check_remap(proposal, ws)
    assert not check.ok and "expected params not loaded" in check.detail


def test_tinyserve_mtp_name_and_exclusion_faults_fixed_end_to_end(git_repo, tmp_path):
    """The eval fixture with both GLM faults injected: diagnose the real load, fix, reload until it loads."""
    src = Path(__file__).resolve().parents[3] / "evals/frameworks/tinyserve"
    files = {
        str(p.relative_to(src)): p.read_text()
        for p in src.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and "build" not in p.parts and p.suffix != ".so"
    }
    model = files["tinyserve/models/glm_moe.py"]
    faulty = model.replace('    ("mlp.shared_experts", "shared_experts"),\n', "").replace(
        "quant_config.remapped(self.remap_checkpoint_name) if quant_config else None", "quant_config"
    )
    assert faulty.count("\n") == model.count("\n") - 1 and "remapped(" not in faulty, "fixture changed shape"
    repo = git_repo({**files, "tinyserve/models/glm_moe.py": faulty})
    ckpt = tmp_path / "ckpt"
    subprocess.run(
        [sys.executable, "-m", "tinyserve.make_checkpoint", "--out", str(ckpt), "--quant", "mxfp4"],
        cwd=repo,
        check=True,
        capture_output=True,
    )
    ws = Workspace(root=repo, profile=load_profile("tinyserve"), checkpoint=ckpt)
    load = [sys.executable, "-c", f"from tinyserve.model_loader import load_model; load_model({str(ckpt)!r})"]
    fixed = []
    for _ in range(3):
        done = subprocess.run(load, cwd=repo, capture_output=True, text=True, check=False)
        if done.returncode == 0:
            break
        failure = diagnose_text(done.stderr, repo_root=repo, source="python")[0]
        result = propose_for(failure, ws)
        assert len(result.proposals) == 1, (failure, result.declines)
        apply_diff(repo, result.proposals[0].diff)
        fixed.append(failure.kind)
    assert done.returncode == 0, done.stderr
    assert fixed == ["weight_name", "quant_exclusion"]


def _glm52(tmp_path, exclusion_fault: bool = True):
    """The flagship task's starting point (optionally without its exclusion fault), its checkpoint and load."""
    task = load_task("glm52_mi355x")
    if not exclusion_fault:
        task = task.model_copy(update={"patches": [p for p in task.patches if "quant_exclusion" not in p]})
    repo = materialize(task, tmp_path / "repo")
    ckpt = tmp_path / "ckpt"
    env = {**os.environ, "PYTHONPATH": str(repo)}
    # the task's own command line, as the eval runner runs it
    subprocess.run(  # noqa: S602
        task.checkpoint_command(str(ckpt)),
        shell=True,
        cwd=repo,
        env=env,
        check=True,
        capture_output=True,
    )
    profile = load_profile("tinyserve")

    def load() -> subprocess.CompletedProcess:  # the profile's load_check, as the agent runs it
        return subprocess.run(  # noqa: S602
            profile.load_check.format(model_path=ckpt),
            shell=True,
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
        )

    return repo, Workspace(root=repo, profile=profile, checkpoint=ckpt), load


def _diagnose(done: subprocess.CompletedProcess, repo: Path) -> Failure:
    assert done.returncode != 0, done.stdout
    return diagnose_text(done.stderr, repo_root=repo, source="python")[0]


def _changed(diff: str, sign: str) -> list[str]:
    return [line for line in diff.splitlines() if line.startswith(sign) and not line.startswith(sign * 3)]


def test_glm52_flagship_name_fix_is_the_missing_entry_of_the_loaders_table(tmp_path):
    repo, ws, load = _glm52(tmp_path)
    failure = _diagnose(load(), repo)
    assert failure.kind == "weight_name"
    result = propose_for(failure, ws)
    assert len(result.proposals) == 1, result.declines
    names = result.proposals[0]
    assert _changed(names.diff, "+") == ['+    ("mlp.shared_experts", "shared_experts"),']
    assert _changed(names.diff, "-") == [] and " MTP_SUBMODULES = (" in names.diff
    assert WeightNameFixer().check(names, ws).ok
    apply_diff(repo, names.diff)

    # this task also drops the exclusions' remap: the exclusion fix reuses the loader's rename method
    failure = _diagnose(load(), repo)
    assert failure.kind == "quant_exclusion"
    result = propose_for(failure, ws)
    assert len(result.proposals) == 1, result.declines
    exclusions = result.proposals[0]
    assert (
        "+        quant_config = _with_framework_exclusions(quant_config, self.remap_checkpoint_name)"
        in exclusions.diff
    )
    assert "_CHECKPOINT_NAME_REMAP" not in exclusions.diff and _changed(exclusions.diff, "-") == []
    assert QuantExclusionFixer().check(exclusions, ws).ok
    apply_diff(repo, exclusions.diff)
    done = load()
    assert done.returncode == 0, done.stderr
    assert (
        WeightNameFixer().propose(failure, ws) is None and QuantExclusionFixer().propose(failure, ws) is None
    )


def test_glm52_one_line_name_fix_also_fixes_the_exclusions_that_share_its_remap(tmp_path):
    repo, ws, load = _glm52(tmp_path, exclusion_fault=False)
    failure = _diagnose(load(), repo)
    asked_anyway = Failure(
        kind="quant_exclusion", message="size mismatch", file="tinyserve/models/glm_moe.py"
    )
    result = propose_for(asked_anyway, ws)
    assert result.proposals == [] and "exclusions already go through the loader's remap" in result.declines[0]

    names = propose_for(failure, ws).proposals[0]
    assert len(_changed(names.diff, "+")) == 1 and _changed(names.diff, "-") == []
    apply_diff(repo, names.diff)
    done = load()
    assert done.returncode == 0, done.stderr  # the MTP shared experts load unquantized: exclusion fixed too
    assert WeightNameFixer().propose(failure, ws) is None
