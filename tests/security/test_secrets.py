"""Credentials stay where the user put them: the sandbox env is an allow-list, and the benchmark sends
a key only when asked. Real LocalSandbox, real DockerSandbox, a real streaming server."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from agent.cli import app
from sandboxes.environ import allowed, sandbox_environ
from sandboxes.local import LocalSandbox
from tests.tools.bench.sse_server import Behaviour

CANARY = "canary-5b1e0c77-do-not-leak"
SECRET_NAMES = (
    "GITHUB_TOKEN",
    "HF_TOKEN",
    "GH_PAT",
    "OPENAI_API_KEY",
    "AWS_SECRET_ACCESS_KEY",
    "MY_SERVICE_CREDENTIALS",
    "HUGGING_FACE_HUB_TOKEN",
    "NPM_AUTH",
    "DB_PASSWORD",
    "ANTHROPIC_API_KEY",
)
"""Ten ways a credential is named; none of them is on any deny-list the old filter had for all ten."""
DISGUISED = ("HIP_API_KEY", "ROCM_TOKEN", "CUDA_AUTH", "PYTORCH_SECRET", "HSA_PASSWORD")
"""Credentials under a prefix the allow-list lets through: still dropped."""


def test_the_allow_list_keeps_toolchain_names_and_drops_every_credential():
    env = {
        "PATH": "/usr/bin",
        "HOME": "/root",
        "LANG": "C.UTF-8",
        "LC_ALL": "C",
        "TERM": "xterm",
        "HIP_PLATFORM": "amd",
        "ROCM_PATH": "/opt/rocm",
        "HSA_OVERRIDE_GFX_VERSION": "9.4.2",
        "CUDA_HOME": "/usr/local/cuda",
        "PYTORCH_ROCM_ARCH": "gfx942",
        "SOME_RANDOM_SETTING": "x",
        "DOCKER_HOST": "unix:///x",
        "SSH_AUTH_SOCK": "/tmp/agent",
        "KUBECONFIG": "/k",
        **dict.fromkeys(SECRET_NAMES + DISGUISED, CANARY),
    }
    kept = sandbox_environ(env)
    assert set(kept) == {
        "PATH",
        "HOME",
        "LANG",
        "LC_ALL",
        "TERM",
        "HIP_PLATFORM",
        "ROCM_PATH",
        "HSA_OVERRIDE_GFX_VERSION",
        "CUDA_HOME",
        "PYTORCH_ROCM_ARCH",
    }
    assert not any(allowed(n) for n in SECRET_NAMES + DISGUISED)


@pytest.fixture
def canaries(monkeypatch):
    for name in SECRET_NAMES + DISGUISED:
        monkeypatch.setenv(name, CANARY)
    monkeypatch.setenv("HIP_VISIBLE_DEVICES", "0")


def test_local_sandbox_commands_and_services_never_see_a_credential(tmp_path, canaries):
    with LocalSandbox(tmp_path, env={"PROFILE_SETTING": "on"}) as sb:
        out = sb.run("env; cat /proc/self/environ | tr '\\0' '\\n'").stdout
        service = sb.start("env > service-env.txt; sleep 30", name="svc")
        for _ in range(100):
            if (tmp_path / "service-env.txt").exists() and (tmp_path / "service-env.txt").read_text():
                break
            sb.run("sleep 0.05")
        service.stop(grace_s=1)
    seen = out + (tmp_path / "service-env.txt").read_text()
    assert CANARY not in seen
    assert "HIP_VISIBLE_DEVICES=0" in out and "PROFILE_SETTING=on" in out and "PATH=" in out


def test_docker_sandbox_env_and_container_config_hold_no_credential(tmp_path, rocm_image, canaries):
    from sandboxes.docker import DockerSandbox

    with DockerSandbox(rocm_image, tmp_path, env={"PROFILE_SETTING": "on"}) as sb:
        out = sb.run("env").stdout
        config_env = "\n".join(sb.container.attrs["Config"]["Env"] or [])
        network = sb.container.attrs["HostConfig"]["NetworkMode"]
    assert CANARY not in out + config_env and "PROFILE_SETTING=on" in out
    assert network == "none"


def test_bench_sends_no_key_by_default_and_the_named_one_when_asked(sse_server, monkeypatch):
    server = sse_server(Behaviour())
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    monkeypatch.setenv("MY_BENCH_KEY", "sk-bench-asked-for")
    common = [
        "bench",
        "--base-url",
        server.url,
        "--model",
        "m",
        "--isl",
        "64",
        "--osl",
        "8",
        "--num-prompts",
        "8",
        "--max-concurrency",
        "2",
        "--json",
    ]
    plain = CliRunner().invoke(app, common)
    assert plain.exit_code == 0, plain.output
    assert server.seen and not any(s.auth for s in server.seen)
    assert CANARY not in plain.output
    asked = CliRunner().invoke(app, [*common, "--api-key-env", "MY_BENCH_KEY"])
    assert asked.exit_code == 0, asked.output
    assert server.seen[-1].auth == "Bearer sk-bench-asked-for"
    assert "sk-bench-asked-for" not in asked.output  # the result JSON never records the key
    missing = CliRunner().invoke(app, [*common, "--api-key-env", "NOT_SET_ANYWHERE"])
    assert missing.exit_code == 2 and "NOT_SET_ANYWHERE is not set" in missing.output
