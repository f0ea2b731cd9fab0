"""Python tracebacks: the exception that matters, the framework frame, the facts a fixer needs."""

from __future__ import annotations

import random

from tools.diagnose import diagnose_text

CHAINED = """\
Traceback (most recent call last):
  File "/srv/tinyserve/tinyserve/models/glm_moe.py", line 118, in load_weights
    param = params_dict[name]
            ~~~~~~~~~~~^^^^^^
KeyError: 'model.mtp.block.mlp.shared_experts.gate_up_proj.weight'

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/srv/tinyserve/tinyserve/model_loader.py", line 44, in load_model
    raise RuntimeError(f"failed to load {path}") from None
RuntimeError: failed to load /ckpt/tiny
"""


def test_chain_reports_the_specific_exception_not_the_wrapper():
    failures = diagnose_text(CHAINED)
    assert [(f.kind, f.file, f.line, f.symbol) for f in failures] == [
        (
            "weight_name",
            "/srv/tinyserve/tinyserve/models/glm_moe.py",
            118,
            "model.mtp.block.mlp.shared_experts.gate_up_proj.weight",
        )
    ]
    excerpt = failures[0].excerpt
    assert "params_dict[name]" in excerpt and "KeyError" in excerpt and "~~~" not in excerpt


def test_installed_framework_frame_is_chosen_over_torch():
    log = """\
[rank0]: Traceback (most recent call last):
[rank0]:   File "/usr/local/lib/python3.12/dist-packages/vllm/model_executor/models/llama.py", line 401, in load_weights
[rank0]:     weight_loader(param, loaded_weight)
[rank0]:   File "/usr/local/lib/python3.12/dist-packages/torch/nn/parameter.py", line 77, in copy_
[rank0]:     return super().copy_(src)
[rank0]: RuntimeError: "copy_" not implemented for 'Float8_e4m3fn'
"""
    (failure,) = diagnose_text(log)
    assert (failure.kind, failure.file, failure.line, failure.symbol) == (
        "unsupported_dtype",
        "vllm/model_executor/models/llama.py",
        401,
        "Float8_e4m3fn",
    )
    assert failure.facts["dtype"] == "Float8_e4m3fn"
    assert failure.facts["function"] == "load_weights"


def test_pip_indented_traceback_and_ordinary_missing_module():
    log = """\
      Traceback (most recent call last):
        File "/tmp/pip-build-env-x1/overlay/lib/python3.11/site-packages/setuptools/build_meta.py", line 30, in run
          exec(code, locals())
        File "<string>", line 12, in <module>
        File "/tmp/pip-req-build-k2/setup.py", line 9, in <module>
          import yaml
      ModuleNotFoundError: No module named 'yaml'
      [end of output]
"""
    (failure,) = diagnose_text(log)
    assert failure.kind == "python_error"  # yaml is not a CUDA-only package
    assert (failure.file, failure.line, failure.symbol) == ("setup.py", 9, "yaml")
    assert failure.facts["module"] == "yaml"


def test_non_weight_keyerror_is_a_python_error():
    log = """\
Traceback (most recent call last):
  File "/srv/tinyserve/tinyserve/config.py", line 40, in load
    kind = data["model_type"]
KeyError: 'model_type'
"""
    (failure,) = diagnose_text(log)
    assert failure.kind == "python_error" and failure.facts["exception"] == "KeyError"


def test_bare_exception_line_and_truncated_traceback():
    bare = diagnose_text(
        "ERROR 03-11 10:02:11 [utils.py:40] ModuleNotFoundError: No module named 'flash_attn'\n"
    )
    assert [(f.kind, f.symbol) for f in bare] == [("cuda_only_dep", "flash_attn")]
    cut = diagnose_text('Traceback (most recent call last):\n  File "/srv/app/x.py", line 3, in main\n')
    assert cut == []  # no exception line reached: nothing to claim


def test_state_dict_mismatch_in_tinyserve_wording():
    log = """\
Traceback (most recent call last):
  File "/repo/tinyserve/models/glm_moe.py", line 121, in load_weights
    param.weight_loader(param, loaded_weight, shard_id)
  File "/repo/tinyserve/nn.py", line 34, in check_shape
    raise RuntimeError(
RuntimeError: Error(s) in loading state_dict for tinyserve:
	size mismatch for model.mtp.shared_experts.gate_up_proj.weight: copying a param with shape torch.Size([512, 256]) from checkpoint, the shape in current model is torch.Size([512, 128]).
	param model.mtp.shared_experts.gate_up_proj.weight has dtype torch.uint8, checkpoint tensor has dtype torch.bfloat16
"""  # noqa: E501 (a verbatim log: its lines are as long as the tool wrote them)
    (failure,) = diagnose_text(log)
    assert (failure.kind, failure.file, failure.line, failure.symbol) == (
        "quant_exclusion",
        "/repo/tinyserve/nn.py",
        34,
        "model.mtp.shared_experts.gate_up_proj.weight",
    )
    assert failure.facts["shapes"] == [[512, 128], [512, 256]]
    assert failure.facts["dtype"] == "uint8"


def test_only_a_wrapper_failed_reports_the_build_not_nothing():
    log = """\
Traceback (most recent call last):
  File "/opt/conda/lib/python3.10/site-packages/torch/utils/cpp_extension.py", line 2209, in _run_ninja_build
    subprocess.run(
subprocess.CalledProcessError: Command '['ninja', '-v']' returned non-zero exit status 1.
"""
    (failure,) = diagnose_text(log)
    assert failure.kind == "compile_error" and failure.facts["wrapper"] is True


def test_garbage_never_crashes_and_error_looking_lines_become_unknown():
    rng = random.Random(7)
    alphabet = "abc:()[]'\"\t ^~|0123456789/._-errorFAILEDTraceback File line In file included from\n"
    noise = "".join(rng.choice(alphabet) for _ in range(200_000))
    diagnose_text(noise)  # must not raise
    failures = diagnose_text("step 3\nerror: the frobnicator exploded\nstep 4\n")
    assert [(f.kind, f.message) for f in failures] == [("unknown", "error: the frobnicator exploded")]
    assert failures[0].excerpt.splitlines() == ["step 3", "error: the frobnicator exploded"]


def test_weight_names_logged_line_by_line_fold_into_one_failure():
    log = """\
[2026-03-11 17:25:41] Parameter model.layers.0.mixer.out_proj.input_scale not found in params_dict
[2026-03-11 17:25:41] Parameter model.layers.0.mixer.out_proj.weight_scale not found in params_dict
WARNING 01-07 07:39:33 gemma2.py:372] Some weights are not initialized from checkpoints: {'layers.23.mlp.down_proj.weight', 'layers.3.mlp.gate_up_proj.weight'}
"""  # noqa: E501 (a verbatim log: its lines are as long as the tool wrote them)
    (failure,) = diagnose_text(log)
    assert failure.kind == "weight_name"
    assert failure.symbol == "model.layers.0.mixer.out_proj.input_scale"
    assert failure.facts["unexpected"] == [
        "model.layers.0.mixer.out_proj.input_scale",
        "model.layers.0.mixer.out_proj.weight_scale",
    ]
    assert failure.facts["missing"] == ["layers.23.mlp.down_proj.weight", "layers.3.mlp.gate_up_proj.weight"]


def test_exception_types_with_unusual_names_still_close_the_traceback():
    log = """\
Traceback (most recent call last):
  File "/srv/tinyserve/tinyserve/engine.py", line 51, in compile_graph
    return torch.compile(fn)(x)
torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised: HIP error: invalid device function
INFO: shutting down
"""
    (failure,) = diagnose_text(log)
    assert (failure.kind, failure.file, failure.line) == (
        "hip_runtime",
        "/srv/tinyserve/tinyserve/engine.py",
        51,
    )
    assert failure.facts["exception"] == "torch._dynamo.exc.BackendCompilerFailed"
