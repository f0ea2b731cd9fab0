"""DockerSandbox against the real daemon and the real local ROCm build image."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import docker
import pytest

from sandboxes import DockerSandbox, SandboxError, ServiceNotReady, cleanup_orphans
from sandboxes.orphans import LABEL_SESSION

pytestmark = pytest.mark.docker
# Orphan cleanup is machine-wide by design: any `rocport` start removes every container whose owner is
# dead. A test that kills an owner and then watches its container must not share the machine with other
# tests that start rocport, so `make test` runs these after the parallel part (`-m serial`).
REPO_ROOT = Path(__file__).resolve().parents[2]
SAMPLE = REPO_ROOT / "sandboxes" / "images" / "samples" / "vector_add.hip"

CUDA_KERNEL = """\
#include <cuda_runtime.h>
__global__ void scale(float* x, float a) { x[threadIdx.x] *= a; }
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "vector_add.hip").write_text(SAMPLE.read_text())
    (root / "scale.cu.hip").write_text(CUDA_KERNEL)
    return root


@pytest.fixture
def sandbox(rocm_image: str, repo: Path):
    with DockerSandbox(rocm_image, repo) as sb:
        yield sb


def _containers_of(session: str) -> list:
    client = docker.from_env()
    return client.containers.list(all=True, filters={"label": f"{LABEL_SESSION}={session}"})


@pytest.mark.parametrize("arch", ["gfx942", "gfx950"])
def test_hipcc_in_container_builds_a_shared_library_for_the_target(sandbox, repo, arch):
    result = sandbox.run(
        f"hipcc -DUSE_ROCM --offload-arch={arch} -fPIC -shared vector_add.hip -o libva.so", timeout=300
    )
    assert result.returncode == 0, result.output
    library = (repo / "libva.so").read_bytes()  # the bind mount is the host's repo
    assert f"amdgcn-amd-amdhsa--{arch}".encode() in library  # the embedded code object's target
    assert b"launch_vector_add" in library


def test_cuda_header_fails_with_the_compilers_message(sandbox):
    result = sandbox.run("hipcc --offload-arch=gfx942 -c scale.cu.hip -o scale.o", timeout=300)
    assert result.returncode != 0
    assert "'cuda_runtime.h' file not found" in result.stderr
    assert "scale.cu.hip:1:10" in result.stderr  # file:line:col as the diagnoser will read them


def test_paths_in_the_container_match_the_host(sandbox, repo):
    result = sandbox.run("pwd && ls")
    assert result.stdout.splitlines()[0] == str(repo.resolve())
    assert "vector_add.hip" in result.stdout


def test_exit_code_stdout_stderr_and_env(sandbox):
    result = sandbox.run('echo "out $GREETING"; echo oops >&2; exit 7', env={"GREETING": "hi"})
    assert (result.returncode, result.stdout, result.stderr) == (7, "out hi\n", "oops\n")
    assert not result.timed_out


def test_host_secrets_do_not_enter_the_container(rocm_image, repo):
    os.environ["ROCPORT_TEST_SECRET"] = "sk-should-not-leak"
    try:
        with DockerSandbox(rocm_image, repo) as sb:
            assert "sk-should-not-leak" not in sb.run("env").stdout
    finally:
        del os.environ["ROCPORT_TEST_SECRET"]


def test_timeout_kills_the_command_and_its_children(sandbox):
    result = sandbox.run("echo started; sleep 300 & sleep 300; echo never", timeout=2)
    assert result.timed_out and result.returncode == 124
    assert result.stdout == "started\n"
    assert result.duration_s < 30
    left = sandbox.run("ps -eo args")
    assert "sleep 300" not in left.stdout


def test_huge_output_keeps_both_ends(sandbox):
    result = sandbox.run("echo FIRST; head -c 5000000 /dev/zero | tr '\\0' x; echo; echo LAST")
    assert result.stdout.startswith("FIRST")
    assert result.stdout.rstrip().endswith("LAST")
    assert "cut by rocport" in result.stdout
    assert len(result.stdout) < 2_100_000


def test_network_off_means_no_route(sandbox):
    # network_mode none has only loopback: the connect fails locally, no packet leaves.
    probe = "import socket; socket.create_connection(('1.1.1.1', 53), timeout=3)"
    result = sandbox.run(f'python3 -c "{probe}"')
    assert result.returncode != 0
    assert "Network is unreachable" in result.stderr


def test_service_in_a_networkless_container_is_checked_from_inside(sandbox, repo):
    (repo / "index.html").write_text("ok")
    service = sandbox.start(
        "python3 -m http.server 18431 --bind 127.0.0.1",
        name="web",
        port=18431,
        health_path="/index.html",
        ready_timeout=30,
    )
    assert service.alive()
    fetched = sandbox.run(
        'python3 -c "import urllib.request as u;'
        " print(u.urlopen('http://127.0.0.1:18431/index.html').read().decode())\""
    )
    assert fetched.stdout.strip() == "ok"
    service.stop(grace_s=5)
    assert not service.alive()
    assert "GET /index.html" in service.logs()


def test_a_service_that_ignores_term_is_killed_after_its_grace_with_its_children(sandbox, repo):
    """stop() TERMs the service's group, waits for its leader up to the grace, then KILLs the group:
    one that ignores TERM ends after the grace, a child it started with it; one that obeys ends at once."""
    stubborn = sandbox.start("trap '' TERM; sleep 300 & echo $! > child.pid; wait", name="stubborn")
    deadline = time.monotonic() + 10
    while not (repo / "child.pid").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    child = (repo / "child.pid").read_text().strip()
    started = time.monotonic()
    stubborn.stop(grace_s=1)
    waited = time.monotonic() - started
    assert not stubborn.alive() and 1 <= waited < 8, waited
    assert sandbox.run(f"test -d /proc/{child}").returncode != 0  # the child went with the group
    obedient = sandbox.start("sleep 300", name="obedient")
    time.sleep(0.2)
    started = time.monotonic()
    obedient.stop(grace_s=5)
    assert not obedient.alive() and time.monotonic() - started < 5


def test_service_with_host_network_is_reachable_from_the_host(rocm_image, repo):
    import urllib.request

    (repo / "index.html").write_text("from the container")
    with DockerSandbox(rocm_image, repo, network=True) as sb:
        sb.start("python3 -m http.server 18432 --bind 127.0.0.1", name="web", port=18432, health_path="/")
        with urllib.request.urlopen("http://127.0.0.1:18432/index.html", timeout=5) as reply:
            assert reply.read() == b"from the container"


def test_service_that_cannot_start_says_why(sandbox):
    with pytest.raises(ServiceNotReady) as err:
        sandbox.start("no-such-server --port 18433", name="bad", port=18433, ready_timeout=20)
    assert "exited before it became ready" in str(err.value)
    assert "command not found" in str(err.value)
    assert "\n" not in str(err.value)


def test_command_not_found_is_a_result_naming_the_command(sandbox):
    result = sandbox.run("cmake-nonexistent --version")
    assert result.returncode == 127
    assert "cmake-nonexistent: command not found" in result.stderr


def test_timeout_kills_what_escaped_with_setsid(sandbox):
    result = sandbox.run("setsid sleep 301 & sleep 300", timeout=2)
    assert result.timed_out
    left = sandbox.run("ps -eo args")
    assert "sleep 301" not in left.stdout, "a setsid escapee survived the build's timeout"


@pytest.mark.serial
def test_container_of_a_killed_owner_stops_by_itself(rocm_image, repo):
    """No rocport command runs after the kill: the container's main process sees the heartbeat go stale."""
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
        import time
        from sandboxes import DockerSandbox
        sb = DockerSandbox({rocm_image!r}, {str(repo)!r})
        sb.start("sleep 600", name="server")
        print(sb.session, flush=True)
        time.sleep(600)
    """),
        ],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO_ROOT,
        env={**os.environ, "ROCPORT_HEARTBEAT_S": "0.5"},
    )
    session = child.stdout.readline().strip()
    (container,) = _containers_of(session)
    assert container.status == "running"
    child.send_signal(signal.SIGKILL)
    child.wait()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and container.status == "running":
        time.sleep(0.5)
        container.reload()
    assert container.status == "exited", "the killed owner's container and its server are still up"
    container.remove(force=True)


def test_container_is_removed_on_close(rocm_image, repo):
    sb = DockerSandbox(rocm_image, repo)
    assert len(_containers_of(sb.session)) == 1
    sb.close()
    sb.close()  # twice is fine
    assert _containers_of(sb.session) == []


def _killed_owner_session(image: str, repo: Path) -> str:
    """A child process makes a sandbox and is killed -9; returns the session of its container."""
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
        import sys, time
        from sandboxes import DockerSandbox
        sb = DockerSandbox({image!r}, {str(repo)!r})
        print(sb.session, flush=True)
        time.sleep(600)
    """),
        ],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO_ROOT,
    )
    session = child.stdout.readline().strip()
    assert session and len(_containers_of(session)) == 1
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert len(_containers_of(session)) == 1  # kill -9 gave it no chance to clean up
    return session


@pytest.mark.serial
def test_orphans_of_a_killed_process_are_cleaned(rocm_image, repo):
    session = _killed_owner_session(rocm_image, repo)
    removed = cleanup_orphans()
    assert f"rocport-{session}" in removed
    assert _containers_of(session) == []


@pytest.mark.serial
def test_the_next_rocport_command_cleans_orphans(rocm_image, repo):
    session = _killed_owner_session(rocm_image, repo)
    script = Path(sys.executable).parent / "rocport"
    proc = subprocess.run(
        [str(script), "image", "list", "--json"], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert _containers_of(session) == []


def test_live_owners_containers_are_kept(sandbox):
    cleanup_orphans()
    assert len(_containers_of(sandbox.session)) == 1
    assert sandbox.run("true").ok


def test_unknown_image_says_how_to_get_it(docker_daemon, repo):
    with pytest.raises(SandboxError) as err:
        DockerSandbox("rocport/rocm-build:0.0-missing", repo)
    message = str(err.value)
    assert "rocport image build" in message and "docker pull" in message and "\n" not in message


def test_daemon_down_says_how_to_start_it(repo):
    script = textwrap.dedent(f"""
        from sandboxes import DockerSandbox, SandboxError
        try:
            DockerSandbox("rocport/rocm-build:6.4", {str(repo)!r})
        except SandboxError as exc:
            print(exc)
    """)
    env = {**os.environ, "DOCKER_HOST": f"unix://{repo}/no-daemon.sock"}
    out = subprocess.run(
        [sys.executable, "-c", script],
        env=env,
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    line = out.stdout.strip()
    assert "cannot reach the Docker daemon" in line and "no-daemon.sock" in line
    assert "dockerd" in line and "\n" not in line


def test_missing_workdir_is_refused(docker_daemon, tmp_path):
    with pytest.raises(SandboxError, match="does not exist: create it"):
        DockerSandbox("rocport/rocm-build:6.4", tmp_path / "nope")


def test_unwritable_workdir_is_refused(docker_daemon, tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    # root ignores mode bits, so as root make the folder immutable instead.
    lock, unlock = (
        (["chattr", "+i", str(locked)], ["chattr", "-i", str(locked)])
        if os.geteuid() == 0
        else (["chmod", "500", str(locked)], ["chmod", "700", str(locked)])
    )
    subprocess.run(lock, check=True)
    try:
        with pytest.raises(SandboxError) as err:
            DockerSandbox("rocport/rocm-build:6.4", locked)
    finally:
        subprocess.run(unlock, check=True)
    assert "is not writable" in str(err.value) and "\n" not in str(err.value)


def test_bad_mount_spec_is_refused(rocm_image, repo):
    with pytest.raises(SandboxError, match="HOST:CONTAINER"):
        DockerSandbox(rocm_image, repo, mounts=["just-a-path"])


def test_read_only_extra_mount_is_visible_but_not_writable(rocm_image, repo, tmp_path):
    data = tmp_path / "weights"
    data.mkdir()
    (data / "config.json").write_text("{}")
    with DockerSandbox(rocm_image, repo, mounts=[f"{data}:/models/tiny:ro"]) as sb:
        assert sb.run("cat /models/tiny/config.json").stdout == "{}"
        assert sb.run("touch /models/tiny/x").returncode != 0


def test_resource_limits_reach_the_container(rocm_image, repo):
    with DockerSandbox(rocm_image, repo, mem_limit="2g", cpus=1.5, pids_limit=256) as sb:
        host = docker.from_env().containers.get(sb.container.id).attrs["HostConfig"]
        assert (host["Memory"], host["NanoCpus"], host["PidsLimit"]) == (2 * 1024**3, 1_500_000_000, 256)
        inside = sb.run("cat /sys/fs/cgroup/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids/pids.max")
        assert inside.stdout.strip() == "256"


def test_gpu_devices_only_when_the_host_has_them(sandbox):
    has_kfd = Path("/dev/kfd").exists()
    assert sandbox.run("test -e /dev/kfd").ok == has_kfd
    host = docker.from_env().containers.get(sandbox.container.id).attrs["HostConfig"]
    assert (host.get("IpcMode") == "host") == has_kfd
