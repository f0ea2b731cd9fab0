"""tools/records.py: Failure, Proposal, CheckResult and PatchOutcome are written out rather than made by
`@dataclass` (tools/record_base.py says why), yet `dataclasses` and LangGraph's checkpoint serialiser
must see the dataclasses they were: a run checkpointed before must resume, and one checkpointed now must
store the same bytes."""

from __future__ import annotations

import base64
import copy
import dataclasses
import inspect
import json

import pytest
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from agent.loop.state import RECORDS
from tools.records import CheckResult, Failure, PatchOutcome, Proposal

CHECKPOINTED_BY_DATACLASSES = (
    "g6hmYWlsdXJlc5HH7gKTrXRvb2xzLnJlY29yZHOnRmFpbHVyZYqka2luZKtjdWRhX2hlYWRlcqdtZXNzYWdl2SxmYXRhbCBl"
    "cnJvcjogJ2N1ZGFfcnVudGltZS5oJyBmaWxlIG5vdCBmb3VuZKRmaWxlqWNzcmMvay5jdaRsaW5lA6Zjb2x1bW4KpnN5bWJv"
    "bK5jdWRhX3J1bnRpbWUuaKdleGNlcnB0oKlzaWduYXR1cmXZJGN1ZGFfaGVhZGVyOmNzcmMvay5jdTpjdWRhX3J1bnRpbWUu"
    "aKZzb3VyY2WlaGlwY2OlZmFjdHOBpHVuaXSpY3NyYy9rLmN1qXByb3Bvc2Fsc5HIAZoCk610b29scy5yZWNvcmRzqFByb3Bv"
    "c2FshrFmYWlsdXJlX3NpZ25hdHVyZdkkY3VkYV9oZWFkZXI6Y3NyYy9rLmN1OmN1ZGFfcnVudGltZS5oqHByb3Bvc2VysHJ1"
    "bGU6Y3VkYV9oZWFkZXKkZGlmZqwtLS0gYQorKysgYgqpcmF0aW9uYWxlqGd1YXJkIGl0pWZpbGVzkaljc3JjL2suY3WnZmFp"
    "bHVyZcfuApOtdG9vbHMucmVjb3Jkc6dGYWlsdXJliqRraW5kq2N1ZGFfaGVhZGVyp21lc3NhZ2XZLGZhdGFsIGVycm9yOiAn"
    "Y3VkYV9ydW50aW1lLmgnIGZpbGUgbm90IGZvdW5kpGZpbGWpY3NyYy9rLmN1pGxpbmUDpmNvbHVtbgqmc3ltYm9srmN1ZGFf"
    "cnVudGltZS5op2V4Y2VycHSgqXNpZ25hdHVyZdkkY3VkYV9oZWFkZXI6Y3NyYy9rLmN1OmN1ZGFfcnVudGltZS5opnNvdXJj"
    "ZaVoaXBjY6VmYWN0c4GkdW5pdKljc3JjL2suY3Wob3V0Y29tZXORyAJPApOtdG9vbHMucmVjb3Jkc6xQYXRjaE91dGNvbWWG"
    "qHByb3Bvc2FsyAGaApOtdG9vbHMucmVjb3Jkc6hQcm9wb3NhbIaxZmFpbHVyZV9zaWduYXR1cmXZJGN1ZGFfaGVhZGVyOmNz"
    "cmMvay5jdTpjdWRhX3J1bnRpbWUuaKhwcm9wb3NlcrBydWxlOmN1ZGFfaGVhZGVypGRpZmasLS0tIGEKKysrIGIKqXJhdGlv"
    "bmFsZahndWFyZCBpdKVmaWxlc5GpY3NyYy9rLmN1p2ZhaWx1cmXH7gKTrXRvb2xzLnJlY29yZHOnRmFpbHVyZYqka2luZKtj"
    "dWRhX2hlYWRlcqdtZXNzYWdl2SxmYXRhbCBlcnJvcjogJ2N1ZGFfcnVudGltZS5oJyBmaWxlIG5vdCBmb3VuZKRmaWxlqWNz"
    "cmMvay5jdaRsaW5lA6Zjb2x1bW4KpnN5bWJvbK5jdWRhX3J1bnRpbWUuaKdleGNlcnB0oKlzaWduYXR1cmXZJGN1ZGFfaGVh"
    "ZGVyOmNzcmMvay5jdTpjdWRhX3J1bnRpbWUuaKZzb3VyY2WlaGlwY2OlZmFjdHOBpHVuaXSpY3NyYy9rLmN1p2FwcGxpZWTD"
    "pmNoZWNrc5HHWwKTrXRvb2xzLnJlY29yZHOrQ2hlY2tSZXN1bHSFpG5hbWWsaGlwY2MgZ2Z4OTQyom9rw6ZkZXRhaWygo2Nt"
    "ZKhoaXBjYyAtY6pkdXJhdGlvbl9zyz/4AAAAAAAApGtlcHTDpnJlYXNvbqCmY29tbWl0pmFiYzEyMw=="
)
"""JsonPlusSerializer(allowed_msgpack_modules=(the four records)).dumps_typed(_state()) made by abba281,
where the four were `@dataclass` classes: type "msgpack", these bytes in base64."""


def _state() -> dict[str, list]:
    f = Failure(
        "cuda_header",
        "fatal error: 'cuda_runtime.h' file not found",
        file="csrc/k.cu",
        line=3,
        column=10,
        symbol="cuda_runtime.h",
        signature="cuda_header:csrc/k.cu:cuda_runtime.h",
        source="hipcc",
        facts={"unit": "csrc/k.cu"},
    )
    p = Proposal(
        f.signature, "rule:cuda_header", "--- a\n+++ b\n", "guard it", files=["csrc/k.cu"], failure=f
    )
    checks = [CheckResult("hipcc gfx942", True, cmd="hipcc -c", duration_s=1.5)]
    o = PatchOutcome(p, True, checks, kept=True, commit="abc123")
    return {"failures": [f], "proposals": [p], "outcomes": [o]}


def _serde() -> JsonPlusSerializer:
    return JsonPlusSerializer(allowed_msgpack_modules=(Failure, Proposal, CheckResult, PatchOutcome))


def test_a_checkpoint_written_when_they_were_dataclasses_loads_and_is_written_the_same_again():
    old = base64.b64decode("".join(CHECKPOINTED_BY_DATACLASSES))
    assert _serde().loads_typed(("msgpack", old)) == _state()
    assert _serde().dumps_typed(_state()) == ("msgpack", old)


@pytest.mark.parametrize("record", [Failure, Proposal, CheckResult, PatchOutcome])
def test_dataclasses_sees_each_record_with_its_init_parameters_as_fields(record):
    params = list(inspect.signature(record).parameters)
    assert tuple(params) == record.FIELDS
    assert dataclasses.is_dataclass(record) and record in RECORDS
    assert [f.name for f in dataclasses.fields(record)] == params


def test_asdict_replace_equality_and_copies_behave_as_for_the_dataclasses():
    state = _state()
    outcome, failure = state["outcomes"][0], state["failures"][0]
    data = dataclasses.asdict(outcome)  # nested records become dicts, all the way down
    assert data["proposal"]["failure"]["facts"] == {"unit": "csrc/k.cu"} and data["checks"][0]["ok"] is True
    assert outcome.to_dict() == data and PatchOutcome.from_dict(json.loads(json.dumps(data))) == outcome
    moved = dataclasses.replace(failure, line=4)
    assert moved.line == 4 and failure.line == 3 and moved != failure
    assert moved == dataclasses.replace(moved) and moved != moved.to_dict()
    assert copy.deepcopy(outcome) == outcome and copy.deepcopy(outcome).proposal is not outcome.proposal
    with pytest.raises(TypeError):  # compared by value and mutable: unhashable, like a dataclass
        hash(failure)
    assert repr(CheckResult("c", True)) == "CheckResult(name='c', ok=True, detail='', cmd='', duration_s=0.0)"
    # defaults that are containers are new for each record, as default_factory made them
    assert Failure("unknown", "").facts is not Failure("unknown", "").facts
    assert (
        Proposal("s", "p", "d", "r").files == []
        and PatchOutcome(Proposal("s", "p", "d", "r"), False).checks == []
    )
