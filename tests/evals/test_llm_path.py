"""The LLM path on the fixture framework: inline PTX lop3 in the MoE gate is fixed through the
ScriptedModel's tool calls inside a real port, in the ROCm container, and proven by the same checks as a
rule patch (hipcc and nvcc unit compiles, CUDA -E identity, the rebuild). The PTX rule now translates
this lop3 itself, so the port runs with the LLM as its only proposer (strategy `llm`)."""

import os
from pathlib import Path

import pytest

from agent.proposers.llm.model import ScriptedModel
from evals.runner import run_task
from evals.taskdefs import load_task

ASM = '  asm("lop3.b32 %0, %1, %2, %3, 0xFC;" : "=r"(out) : "r"(mask), "r"(bits), "r"(0u));\n'
SCRIPT = [
    [("grep", {"pattern": "lop3", "glob": "csrc/*"})],
    [("read_file", {"path": "csrc/moe_gate.cu", "start_line": 1, "end_line": 20})],
    [
        (
            "propose_edit",
            {
                "path": "csrc/moe_gate.cu",
                "search": ASM,
                "replace": (
                    "#ifdef USE_ROCM\n  out = mask | bits;  // LOP3 truth table 0xFC is a | b\n"
                    f"#else\n{ASM}#endif\n"
                ),
            },
        )
    ],
    [("compile_check", {"path": "csrc/moe_gate.cu"})],
    [
        (
            "finish",
            {
                "rationale": "LOP3 with truth table 0xFC computes mask | bits; AMDGPU has no PTX, so ROCm "
                "uses the plain expression and CUDA keeps its instruction."
            },
        )
    ],
]


@pytest.mark.slow
def test_scripted_llm_fixes_inline_ptx_in_a_real_port(tmp_path, rocm_image, nvcc):
    model = ScriptedModel(list(SCRIPT))
    run = run_task(load_task("inline_ptx_moe_gate"), "llm", tmp_path, model=model)
    assert run.resolved, run.reason
    assert run.llm_tokens > 0 and run.builds == 1 and run.launches == 1 and run.patches_kept == 1
    assert len(model.seen) == len(SCRIPT)  # the model was asked exactly as scripted, no more
    assert "invalid instruction" in model.seen[0][1]["content"]  # the context pack carried the compiler error
    assert model.seen[4][-1]["content"].startswith("compiles")  # hipcc in the ROCm container saw the edit
    assert run.unit_compiles >= 3  # the model's compile check plus the validator's hipcc and nvcc
    # a run whose sandbox compiled what an LLM wrote adds nothing to the compile cache runs share
    shared = Path(os.environ["ROCPORT_SHARED_COMPILE_CACHE"])
    assert not [p for p in shared.rglob("*") if p.is_file()]
