"""How a DockerSandbox's container is set up: the daemon connection, the workdir check, AMD GPU
devices, extra bind mounts and the network mode. Each answers from this host's facts alone."""

from __future__ import annotations

import grp
import os
import tempfile
from pathlib import Path
from typing import Any

import docker
from docker.errors import APIError, DockerException, NotFound

from sandboxes.base import SandboxError


def connect() -> docker.DockerClient:
    """A client for the daemon DOCKER_HOST (or the default socket) names; SandboxError when down."""
    where = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    try:
        client = docker.from_env(timeout=120)
        client.ping()
    except DockerException as exc:
        raise SandboxError(
            f"cannot reach the Docker daemon at {where}: start it (`systemctl start docker`, "
            "or `dockerd --iptables=false --bridge=none &` as root) or fix DOCKER_HOST "
            f"({type(exc).__name__})"
        ) from exc
    return client


def check_workdir(workdir: str | os.PathLike[str]) -> Path:
    path = Path(workdir).resolve()
    if not path.is_dir():
        raise SandboxError(f"workdir {path} does not exist: create it or pass an existing repo checkout")
    try:  # a real write: root passes every os.access check, yet read-only or immutable folders refuse
        tempfile.TemporaryFile(dir=path).close()
    except OSError as exc:
        raise SandboxError(
            f"workdir {path} is not writable ({exc.strerror}): builds write into the repo; "
            "fix its permissions or copy the repo somewhere writable"
        ) from None
    return path


def gpu_options() -> dict[str, Any]:
    """Docker options that expose AMD GPUs; empty when this machine has no /dev/kfd."""
    if not Path("/dev/kfd").exists():
        return {}
    groups = [str(g.gr_gid) for name in ("video", "render") for g in grp.getgrall() if g.gr_name == name]
    devices = ["/dev/kfd:/dev/kfd:rwm"]
    if Path("/dev/dri").exists():
        devices.append("/dev/dri:/dev/dri:rwm")
    return {
        "devices": devices,
        "group_add": groups,
        "ipc_mode": "host",
        "shm_size": "16g",
        "security_opt": ["seccomp=unconfined"],
        "cap_add": ["SYS_PTRACE"],
    }


def parse_mount(spec: str) -> docker.types.Mount:
    """'HOST:CONTAINER[:ro]' -> a bind Mount."""
    parts = spec.split(":")
    if len(parts) not in (2, 3) or (len(parts) == 3 and parts[2] not in ("ro", "rw")):
        raise SandboxError(f"bad mount {spec!r}: write HOST:CONTAINER or HOST:CONTAINER:ro")
    return docker.types.Mount(
        parts[1], str(Path(parts[0]).resolve()), type="bind", read_only=len(parts) == 3 and parts[2] == "ro"
    )


def network_mode(client: docker.DockerClient, network: bool) -> str:
    """'none' unless the job asks for a network; then the daemon's bridge (host networking only where
    the daemon has no bridge, e.g. dockerd --bridge=none)."""
    if not network:
        return "none"
    try:
        client.networks.get("bridge")
    except (NotFound, APIError):
        return "host"
    return "bridge"
