"""The search strategies and the result arithmetic, with a deterministic evaluator standing in for
the launch (the launch itself is exercised end to end in test_tune_e2e.py)."""

from __future__ import annotations

import subprocess

import pytest

from agent.profiles import load_profile
from agent.tune.candidates import every_candidate, launch_args, launch_env, splits, start
from agent.tune.search import coordinate_search, exhaustive_search
from agent.tune.spec import ParallelSpace, Switch, TuneSpace
from tools.tune.records import Trial
from tools.tune.results import ReferenceError, pareto, parse_reference, usd_per_mtok

SPACE = TuneSpace(
    gpus=8,
    parallel=ParallelSpace(tp=[8, 4, 2, 1], ep="tp", ep_arg="--ep-size {ep}"),
    switches=[
        Switch(name="attention_backend", values=["triton", "aiter"], arg="--attention-backend {value}"),
        Switch(name="aiter", values=[False, True], env={"SGLANG_USE_AITER": "{value}"}),
    ],
)


def test_splits_multiply_to_the_node_and_ep_stays_inside_tp():
    found = {(s.tp, s.dp, s.ep) for s in splits(SPACE, 8)}
    assert (4, 2, 4) in found and (8, 1, 8) in found and (1, 8, 1) in found
    assert all(tp * dp == 8 and tp % ep == 0 for tp, dp, ep in found)
    assert splits(SPACE, 6) == [s for s in splits(SPACE, 6) if s.tp in (2, 1)]


def test_a_candidate_renders_its_flags_and_environment():
    cand = start(SPACE, 8).with_setting("aiter", True).with_setting("attention_backend", "aiter")
    assert launch_args(SPACE, cand) == "--attention-backend aiter"
    assert launch_env(SPACE, cand) == {"SGLANG_USE_AITER": "1"}
    ep = cand.with_setting("split", splits(SPACE, 8)[1])
    assert "--ep-size 8" in launch_args(SPACE, ep)


def _scored(table):
    """An evaluator that scores a candidate with `table(candidate)` and records what it launched."""
    launched = []

    def evaluate(cand, incumbent):
        launched.append(cand)
        tok = table(cand)
        return Trial(
            key=cand.key(),
            settings={},
            gpus=8,
            command="",
            status="measured",
            output_tok_s=tok,
            ttft_ms=100.0,
            tpot_ms=10.0,
        )

    return evaluate, launched


def test_coordinate_search_launches_one_plus_the_sum_of_the_alternatives_and_finds_a_separable_best():
    def table(c):
        return (
            {8: 100, 4: 180, 2: 150, 1: 90}[c.split.tp]
            * (1.3 if c.split.ep > 1 else 1)
            * (1.2 if dict(c.values)["aiter"] else 1)
            * (1.1 if dict(c.values)["attention_backend"] == "aiter" else 1)
        )

    evaluate, launched = _scored(table)
    found = coordinate_search(SPACE, 8, evaluate, wall_budget_s=3600)
    grid = exhaustive_search(SPACE, 8, _scored(table)[0])
    assert found.grid_size == len(every_candidate(SPACE, 8)) == 28
    assert found.launches == 1 + (len(splits(SPACE, 8)) - 1) + 1 + 1 == len(launched)
    assert found.best == grid.best
    assert "TP4xDP2-EP4" in found.best


def test_the_wall_budget_stops_new_launches():
    evaluate, launched = _scored(lambda c: 100.0)
    found = coordinate_search(SPACE, 8, evaluate, wall_budget_s=0)
    assert found.stopped_by_budget and len(launched) == 1


def test_pareto_keeps_what_nothing_beats_on_throughput_and_latency():
    def t(key, tok, ttft, tpot):
        return Trial(
            key=key,
            settings={},
            gpus=8,
            command="",
            status="measured",
            output_tok_s=tok,
            ttft_ms=ttft,
            tpot_ms=tpot,
        )

    trials = [
        t("fast", 200, 300, 30),
        t("snappy", 120, 100, 10),
        t("worse", 110, 400, 40),
        Trial(key="stopped", settings={}, gpus=8, command="", status="stopped early"),
    ]
    assert [x.key for x in pareto(trials)] == ["fast", "snappy"]


def test_cost_per_million_tokens_and_reference_rows():
    assert usd_per_mtok(2626, 8, 2.0) == pytest.approx(2.0 * 8 / 3600 / 2626 * 1e6)
    ref = parse_reference("B200:3192:6.5")
    assert (ref.name, ref.tok_s_per_node, ref.price_per_gpu_hour, ref.gpus) == ("B200", 3192, 6.5, 8)
    assert ref.usd_per_mtok == pytest.approx(6.5 * 8 / 3600 / 3192 * 1e6)
    assert parse_reference("H100:1500").usd_per_mtok is None
    for bad in ("B200", "B200:fast", ":3192", "B200:-1:2"):
        with pytest.raises(ReferenceError, match=r"NAME:TOKENS_PER_S_PER_NODE|positive"):
            parse_reference(bad)


@pytest.mark.parametrize("name", ["sglang", "vllm", "tinyserve"])
def test_every_bundled_profile_declares_a_searchable_space(name):
    space = load_profile(name).tune
    assert space is not None and len(every_candidate(space, space.gpus)) >= 6
    assert space.moe_tuning is not None


def test_moe_configs_land_where_the_probe_says(tmp_path):
    from agent.loop.rundir import RunDir
    from agent.tune.moe import tune_moe_configs
    from agent.tune.spec import MoeTuning
    from sandboxes.local import LocalSandbox

    rundir = RunDir("20260101-000000-probe-0000", tmp_path)
    rundir.create("framework: {profile: tinyserve}\n")
    repo = rundir.repo
    repo.mkdir()
    for cmd in (
        ["git", "init", "-q", "-b", "main"],
        ["git", "-c", "user.name=t", "-c", "user.email=t@l", "commit", "-q", "--allow-empty", "-m", "init"],
    ):
        subprocess.run(cmd, cwd=repo, check=True)
    spec = MoeTuning(
        command="echo 'M=1 best 7 us' && echo '{{}}' > {out_dir}/E=8,N=64.json",
        config_dir="configs/{probe}",
        config_dir_probe="echo triton_3_4_0",
    )
    with LocalSandbox(repo) as box:
        record = tune_moe_configs(box, rundir, spec, model_path="/none")
    assert record["files"] == ["configs/triton_3_4_0/E=8,N=64.json"] and record["commit"]
    assert "M=1 best 7 us" in record["evidence"]
    failing = spec.model_copy(update={"config_dir_probe": "exit 3"})
    with LocalSandbox(repo) as box:
        assert "cannot tell where" in tune_moe_configs(box, rundir, failing, model_path="/none")["reason"]
