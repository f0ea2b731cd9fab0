"""Workloads: exact token-id lengths, forced output lengths, prefix groups a server can really hit."""

from __future__ import annotations

import json

import pytest

from tools.bench import Workload, WorkloadError, build_plan, preset


def _bodies(reqs):
    return [json.loads(r.body) for r in reqs]


def test_prompts_are_exact_length_token_ids_with_forced_output_length():
    plan = build_plan(Workload(isl=300, osl=50, num_prompts=10), "my-model")
    for body in _bodies(plan.measured):
        assert len(body["prompt"]) == 300 and all(isinstance(t, int) for t in body["prompt"])
        assert body["max_tokens"] == body["min_tokens"] == 50 and body["ignore_eos"] is True
        assert body["stream"] is True and body["stream_options"]["include_usage"] is True
        assert body["model"] == "my-model"
    assert len({tuple(b["prompt"]) for b in _bodies(plan.measured)}) == 10


def test_prefix_groups_share_exactly_the_prefix_and_warmup_primes_each_group():
    wl = Workload(isl=200, osl=8, num_prompts=40, prefix_hit=0.6, prefix_groups=4)
    plan = build_plan(wl, "m", warmup=2)
    assert wl.prefix_len == 120
    warm, measured = _bodies(plan.warmup), _bodies(plan.measured)
    assert len(warm) == 4 + 2 and all(b["max_tokens"] <= 16 for b in warm)
    prefixes = {tuple(b["prompt"][:120]) for b in warm[:4]}
    assert len(prefixes) == 4
    everything = [b["prompt"] for b in warm + measured]
    for body in measured:
        p = body["prompt"]
        assert tuple(p[:120]) in prefixes
        # No other request shares more than the prefix: the server can hit 60%, not more.
        for other in everything:
            if other is not p:
                assert other[:121] != p[:121]


def test_glm52_preset_is_the_ported_workload():
    wl = preset("glm52-mi355x")
    assert (wl.isl, wl.osl, wl.prefix_hit) == (20000, 1000, 0.6)
    assert wl.prefix_len == 12000 and wl.expected_hit_rate == pytest.approx(0.6)
    plan = build_plan(wl, "glm", warmup=0)
    first = json.loads(plan.measured[0].body)
    assert len(first["prompt"]) == 20000 and first["max_tokens"] == 1000


def test_chat_prompts_are_text_messages():
    plan = build_plan(Workload(isl=50, osl=5, num_prompts=2), "m", endpoint="chat")
    body = json.loads(plan.measured[0].body)
    assert body["messages"][0]["role"] == "user" and len(body["messages"][0]["content"].split()) == 50


@pytest.mark.parametrize(
    ("kw", "says"),
    [
        ({"prefix_hit": 1.0}, "--prefix-hit"),
        ({"isl": 0}, "ISL"),
        ({"num_prompts": 0}, "--num-prompts"),
    ],
)
def test_bad_workloads_say_what_to_change(kw, says):
    args = {"isl": 100, "osl": 10, **kw}
    with pytest.raises(WorkloadError, match=says):
        build_plan(Workload(**args), "m")


def test_unknown_preset_lists_the_known_ones():
    with pytest.raises(WorkloadError, match="glm52-mi355x"):
        preset("nope")


def test_extra_body_overrides_request_fields():
    plan = build_plan(
        Workload(isl=8, osl=4, num_prompts=1),
        "m",
        extra_body={"stream_options": {"include_usage": True}, "top_k": 1},
    )
    body = json.loads(plan.measured[0].body)
    assert body["stream_options"] == {"include_usage": True} and body["top_k"] == 1


def test_request_timeout_grows_with_the_workload_and_stops_at_the_budget():
    from tools.bench import request_timeout

    small, long = Workload(isl=64, osl=8), Workload(isl=20000, osl=1000)
    assert request_timeout(small) == 64.6
    assert request_timeout(long) == 60 + 200 + 500
    assert request_timeout(long, budget_s=120) == 120  # what is left of the run's wall time
    assert request_timeout(long, budget_s=1) == 30  # a nearly spent budget still lets a request finish
