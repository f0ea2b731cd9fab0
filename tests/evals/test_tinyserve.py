"""The fixture framework itself: the clean copy builds (hipcc in the ROCm image, host hipcc, nvcc),
its checkpoint loads through load_weights, expected_params agrees with the checkpoint, and the server
streams completions with usage and prefix-cache hits over real HTTP."""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from evals.taskdefs import copy_framework
from sandboxes.local import LocalSandbox
from tests.conftest import ROCM_IMAGE

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def framework(tmp_path_factory) -> Path:
    return copy_framework("tinyserve", tmp_path_factory.mktemp("tinyserve") / "repo")


@pytest.fixture(scope="module")
def checkpoint(framework: Path, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("ckpt") / "tiny"
    run_py(framework, "-m", "tinyserve.make_checkpoint", "--out", str(out))
    return out


def run_py(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=300, check=False
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"{args} failed:\n{proc.stdout}\n{proc.stderr}")
    return proc


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- builds -------------------------------------------------------------------------------------------


@pytest.mark.docker
def test_clean_copy_builds_for_gfx942_in_rocm_image(framework: Path, rocm_image, tmp_path):
    work = copy_framework("tinyserve", tmp_path / "repo")
    proc = subprocess.run(
        [
            "docker",
            "run",
            "--rm",
            "--network",
            "none",
            "-v",
            f"{work}:{work}",
            "-w",
            str(work),
            ROCM_IMAGE,
            "python3",
            "build.py",
            "--backend",
            "rocm",
            "--arch",
            "gfx942",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "-DUSE_ROCM" in proc.stdout and "--offload-arch=gfx942" in proc.stdout
    assert (work / "build" / "libtinyserve_kernels.so").stat().st_size > 0
    assert json.loads((work / "build" / "build_info.json").read_text())["arch"] == "gfx942"


@pytest.mark.hipcc
def test_warp_kernels_compile_with_host_hipcc(framework: Path, hipcc, tmp_path):
    # Host ROCm 5.2 predates hip_bf16.h/hip_fp8.h, so only the units that need nothing newer are compiled.
    for unit in ("csrc/rmsnorm.cu", "csrc/moe_gate.cu"):
        out = tmp_path / (Path(unit).stem + ".o")
        proc = subprocess.run(
            [
                hipcc,
                "-x",
                "hip",
                "-DUSE_ROCM",
                "-fPIC",
                "--offload-arch=gfx90a",
                "-O2",
                "-std=c++17",
                "-Icsrc",
                "-c",
                unit,
                "-o",
                str(out),
            ],
            cwd=framework,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        assert out.stat().st_size > 0


@pytest.mark.nvcc
def test_clean_copy_builds_with_nvcc(nvcc, tmp_path):
    work = copy_framework("tinyserve", tmp_path / "repo")
    proc = run_py(work, "build.py", "--backend", "cuda", "--arch", "sm_90", check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (work / "build" / "libtinyserve_kernels.so").stat().st_size > 0


@pytest.mark.nvcc
def test_build_keeps_going_and_reports_every_failing_unit(nvcc, tmp_path):
    work = copy_framework("tinyserve", tmp_path / "repo")
    for unit in ("rmsnorm.cu", "moe_gate.cu"):
        path = work / "csrc" / unit
        path.write_text(path.read_text() + '\nstatic_assert(false, "broken on purpose");\n')
    proc = run_py(work, "build.py", "--backend", "cuda", check=False)
    assert proc.returncode != 0
    assert "FAILED: build/rmsnorm.o" in proc.stdout and "FAILED: build/moe_gate.o" in proc.stdout
    assert proc.stdout.count("broken on purpose") >= 2  # compiler output is printed verbatim
    assert (work / "build" / "activation.o").exists()  # the good units still compiled
    assert not (work / "build" / "libtinyserve_kernels.so").exists()


# --- checkpoint, loader, expected params ---------------------------------------------------------------


def test_checkpoint_is_sharded_safetensors_with_an_index(checkpoint: Path):
    index = json.loads((checkpoint / "model.safetensors.index.json").read_text())
    shards = set(index["weight_map"].values())
    assert len(shards) > 1 and all((checkpoint / s).is_file() for s in shards)
    config = json.loads((checkpoint / "config.json").read_text())
    n = config["num_hidden_layers"]
    assert f"model.layers.{n}.eh_proj.weight" in index["weight_map"]  # the MTP head, GLM-style
    assert f"model.layers.{n}.mlp.shared_experts.down_proj.weight" in index["weight_map"]
    assert f"model.layers.{n}.mlp.shared_experts" in config["quantization_config"]["modules_to_not_convert"]


def test_checkpoint_reads_with_the_safetensors_package(checkpoint: Path):
    import safetensors  # a dependency of rocport: missing, this fails rather than skips

    index = json.loads((checkpoint / "model.safetensors.index.json").read_text())
    name = "model.layers.0.mlp.experts.1.down_proj.weight"
    with safetensors.safe_open(str(checkpoint / index["weight_map"][name]), "np") as f:
        packed = f.get_tensor(name)
    assert packed.dtype == np.uint8 and packed.shape == (64, 16)  # MXFP4: K/2 bytes per row


def test_expected_params_match_the_checkpoint_after_the_loader_mapping(framework: Path, checkpoint: Path):
    expected = json.loads(
        run_py(framework, "-m", "tinyserve.expected_params", "--model-path", str(checkpoint)).stdout
    )
    assert "model.mtp.shared_experts.gate_up_proj.weight" in expected
    assert expected["model.layers.0.mlp.experts.0.gate_up_proj.weight"] == {
        "shape": [64, 32],
        "dtype": "uint8",
    }
    assert expected["model.mtp.shared_experts.gate_up_proj.weight"] == {
        "shape": [64, 64],
        "dtype": "bfloat16",
    }
    # Load for real and check every registered parameter was filled from the checkpoint.
    script = (
        "import json,sys; from tinyserve.model_loader import load_model; "
        "m=load_model(sys.argv[1]); print(json.dumps(sorted(n for n,_ in m.named_parameters())))"
    )
    loaded = json.loads(run_py(framework, "-c", script, str(checkpoint)).stdout)
    assert loaded == sorted(expected)


def test_loader_names_unknown_and_missing_weights(framework: Path, checkpoint: Path):
    script = """
import sys
from tinyserve.model_loader import build_model, iterate_weights
model = build_model(sys.argv[1])
weights = list(iterate_weights(sys.argv[1]))
try:
    model.load_weights(weights + [("model.layers.0.mlp.bogus.weight", weights[0][1])])
except KeyError as exc:
    print("KeyError", exc)
try:
    build_model(sys.argv[1]).load_weights(w for w in weights if "shared_head.norm" not in w[0])
except ValueError as exc:
    print(exc)
"""
    out = run_py(framework, "-c", script, str(checkpoint)).stdout
    assert "KeyError 'model.layers.0.mlp.bogus.weight'" in out
    assert "not initialized from checkpoint: ['model.mtp.shared_head.norm.weight']" in out


def test_mtp_head_predicts_from_the_loaded_weights(framework: Path, checkpoint: Path):
    script = """
import sys, numpy as np
from tinyserve.model_loader import load_model
from tinyserve.layers.attention import KVCache
m = load_model(sys.argv[1])
ids = np.array([72, 105, 33])
hidden = m.forward(ids, 0, [KVCache() for _ in m.model.layers])
logits = m.model.mtp(m.model.embed_tokens(ids), hidden, np.arange(3), KVCache())
print(logits.shape, bool(np.isfinite(logits).all()), float(np.abs(logits).max()) > 0)
"""
    assert run_py(framework, "-c", script, str(checkpoint)).stdout.split() == ["(3,", "320)", "True", "True"]


def test_mxfp4_round_trip_keeps_values_close(framework: Path):
    script = """
import numpy as np
from tinyserve.quant import quantize_mxfp4, dequantize_mxfp4
w = np.random.default_rng(1).standard_normal((8, 64)).astype(np.float32)
p, s = quantize_mxfp4(w)
r = dequantize_mxfp4(p, s)
print(p.shape, s.shape, float(np.abs(r - w).max() / np.abs(w).max()))
"""
    out = run_py(framework, "-c", script).stdout.split()
    assert out[:4] == ["(8,", "32)", "(8,", "2)"]
    assert float(out[4]) < 0.25  # e2m1 has 3 bits of magnitude: coarse but bounded


# --- the server ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server(framework: Path, checkpoint: Path):
    port = free_port()
    with LocalSandbox(framework) as box:
        service = box.start(
            f"{sys.executable} -m tinyserve.launch_server --model-path {checkpoint} "
            f"--port {port} --host 127.0.0.1 --tp 1",
            name="tinyserve",
            port=port,
            health_path="/health",
            ready_timeout=60,
        )
        yield port, service
        service.stop()


def post(port: int, path: str, body: dict) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    resp = conn.getresponse()
    return resp.status, resp.read()


def sse_events(raw: bytes) -> list:
    events = [line[len("data: ") :] for line in raw.decode().split("\n") if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    return [json.loads(e) for e in events[:-1]]


def test_streaming_completion_reports_usage_and_prefix_cache_hits(server):
    port, _ = server
    prefix = list(range(1, 49))  # three 16-token blocks
    body = {
        "prompt": [*prefix, 200, 201],
        "max_tokens": 6,
        "ignore_eos": True,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    status, raw = post(port, "/v1/completions", body)
    assert status == 200
    first = sse_events(raw)
    assert len([e for e in first if e["choices"]]) == 6
    assert first[-1]["usage"]["prompt_tokens"] == 50 and first[-1]["usage"]["completion_tokens"] == 6
    assert first[-1]["usage"]["prompt_tokens_details"]["cached_tokens"] == 0
    status, raw = post(port, "/v1/completions", {**body, "prompt": [*prefix, 210, 211, 212]})
    second = sse_events(raw)
    assert second[-1]["usage"]["prompt_tokens_details"]["cached_tokens"] == 48
    # A cache hit must not change the greedy output: same prompt, cached or not, same text.
    _, raw = post(port, "/v1/completions", body)
    again = sse_events(raw)

    def text(events):
        return "".join(c["text"] for e in events for c in e["choices"])

    assert text(again) == text(first)
    assert again[-1]["usage"]["prompt_tokens_details"]["cached_tokens"] == 48


def test_chat_completion_and_models_endpoint(server):
    port, _ = server
    status, raw = post(
        port,
        "/v1/chat/completions",
        {"messages": [{"role": "user", "content": "hello"}], "max_tokens": 4, "ignore_eos": True},
    )
    reply = json.loads(raw)
    assert status == 200 and reply["object"] == "chat.completion"
    assert reply["usage"]["completion_tokens"] == 4 and reply["choices"][0]["finish_reason"] == "length"
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", "/v1/models")
    models = json.loads(conn.getresponse().read())
    assert models["data"][0]["owned_by"] == "tinyserve"


def test_bad_requests_get_a_400_with_a_message(server):
    port, _ = server
    status, raw = post(port, "/v1/completions", {"prompt": [1, 2, 99999], "max_tokens": 2})
    assert status == 400 and "token ids must be in" in json.loads(raw)["message"]


def test_unknown_server_flag_is_an_argparse_error(framework: Path, checkpoint: Path):
    proc = run_py(
        framework,
        "-m",
        "tinyserve.launch_server",
        "--model-path",
        str(checkpoint),
        "--enable-dp-attention",
        check=False,
    )
    assert proc.returncode == 2
    assert "error: unrecognized arguments: --enable-dp-attention" in proc.stderr


def test_a_wrong_model_path_is_a_one_line_usage_error(framework: Path, tmp_path: Path):
    for module in ("tinyserve.launch_server", "tinyserve.expected_params"):
        proc = run_py(framework, "-m", module, "--model-path", str(tmp_path / "nope"), check=False)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr
        assert (
            f"{tmp_path / 'nope'}/config.json not found: --model-path must be a checkpoint directory"
            in proc.stderr
        )
