"""`rocport doctor` through its real entry point tells the truth about this machine."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from agent.cli import app
from sandboxes.images.recipes import CANDIDATE_ARCHS

NO_LLM = {"OPENAI_BASE_URL": None, "OPENAI_API_KEY": None}


def _doctor(env: dict) -> dict:
    result = CliRunner().invoke(app, ["doctor", "--json"], env=env)
    assert result.exit_code == 0, result.output
    return {check["name"]: check for check in json.loads(result.stdout)}


def test_doctor_reports_compilers_docker_images_and_no_gpu(nvcc, hipcc, rocm_image, tmp_path):
    checks = _doctor(NO_LLM)
    assert checks["nvcc"]["ok"] and checks["nvcc"]["facts"]["path"] == nvcc
    assert checks["Docker daemon"]["ok"]
    images = {img["tag"]: img for img in checks["ROCm build image"]["facts"]["images"]}
    assert {"gfx942", "gfx950"} <= set(images[rocm_image]["archs"])
    assert checks["GPUs"]["ok"] == Path("/dev/kfd").exists()
    assert checks["LLM endpoint"]["ok"] is False and "OPENAI_BASE_URL" in checks["LLM endpoint"]["fix"]
    host = checks["hipcc (host)"]["facts"]
    assert host["path"] == hipcc and host["archs"]
    # A target the doctor says the host hipcc lacks really fails to compile there.
    src = tmp_path / "k.hip"
    src.write_text("#include <hip/hip_runtime.h>\n__global__ void k(float* x) { x[0] = 1.0f; }\n")
    for arch in CANDIDATE_ARCHS:
        proc = subprocess.run(
            [hipcc, f"--offload-arch={arch}", "-c", str(src), "-o", str(tmp_path / "k.o")],
            capture_output=True,
            env={"HIP_PLATFORM": "amd", "PATH": "/usr/bin:/bin"},
            check=False,
        )
        assert (proc.returncode == 0) == (arch in host["archs"]), arch


def test_doctor_never_prints_the_api_key(docker_daemon):
    secret = "sk-rocport-test-0123456789"
    with socket.socket() as listener:  # an endpoint that answers
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        env = {
            "OPENAI_BASE_URL": f"http://127.0.0.1:{listener.getsockname()[1]}/v1",
            "OPENAI_API_KEY": secret,
        }
        for args in (["doctor"], ["doctor", "--json"]):
            result = CliRunner().invoke(app, args, env=env)
            assert result.exit_code == 0 and secret not in result.output
        checks = _doctor(env)
    assert checks["LLM endpoint"]["ok"] and "API key set" in checks["LLM endpoint"]["detail"]
    # The port is closed now: the endpoint is reported unreachable, with what to do, still without the key.
    result = CliRunner().invoke(app, ["doctor", "--json"], env=env)
    assert secret not in result.output
    llm = _doctor(env)["LLM endpoint"]
    assert not llm["ok"] and "nothing answers" in llm["detail"] and "OPENAI_BASE_URL" in llm["fix"]


def test_doctor_table_from_the_console_script_says_what_to_do(docker_daemon):
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    script = Path(sys.executable).parent / "rocport"  # the installed console script, as a user runs it
    proc = subprocess.run(
        [str(script), "doctor"],
        capture_output=True,
        text=True,
        env={**env, "COLUMNS": "200"},
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Docker daemon" in proc.stdout and "LLM endpoint" in proc.stdout
    assert "set OPENAI_BASE_URL" in proc.stdout
