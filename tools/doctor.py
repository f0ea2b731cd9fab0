"""What this machine offers rocport: compilers, Docker, ROCm build images, GPUs, an LLM endpoint.

Each check is real (a version query, a tiny compile, a daemon ping) and says what to do when a
part is missing. The CLI renders the list; nothing here prints.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sandboxes.images.listing import local_build_images
from sandboxes.images.recipes import CANDIDATE_ARCHS, IMAGE_REPO

TINY_KERNEL = "#include <hip/hip_runtime.h>\n__global__ void probe(float* x) { x[0] = 1.0f; }\n"


@dataclass
class Check:
    """One line of the doctor's report."""

    name: str
    ok: bool
    detail: str
    fix: str = ""
    """What to do when the part is missing or broken; empty when ok."""
    facts: dict[str, Any] = field(default_factory=dict)


def _run(cmd: list[str], env: dict[str, str] | None = None, timeout: float = 60) -> tuple[int, str]:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return -1, str(exc)
    return proc.returncode, proc.stdout + proc.stderr


def hipcc_accepts(hipcc: str, archs: tuple[str, ...] = CANDIDATE_ARCHS) -> list[str]:
    """The --offload-arch targets for which `hipcc` really compiles a tiny kernel."""
    env = {**os.environ, "HIP_PLATFORM": "amd"}
    with tempfile.TemporaryDirectory(prefix="rocport-doctor-") as tmp:
        src = Path(tmp, "probe.hip")
        src.write_text(TINY_KERNEL)

        def compiles(arch: str) -> bool:
            code, _ = _run([hipcc, f"--offload-arch={arch}", "-c", str(src), "-o", f"{tmp}/{arch}.o"], env)
            return code == 0

        with ThreadPoolExecutor(max_workers=len(archs)) as pool:
            return [arch for arch, ok in zip(archs, pool.map(compiles, archs), strict=True) if ok]


def check_hipcc() -> Check:
    """Host hipcc: version, the platform it was asked for, and the targets it accepts."""
    hipcc = shutil.which("hipcc")
    if hipcc is None:
        return Check(
            "hipcc (host)",
            False,
            "not found",
            f"optional: `apt-get install hipcc`; builds run in the image anyway ({IMAGE_REPO})",
        )
    _, out = _run([hipcc, "--version"], {**os.environ, "HIP_PLATFORM": "amd"})
    hip = re.search(r"HIP version: (\S+)", out)
    clang = re.search(r"clang version (\S+)", out)
    archs = hipcc_accepts(hipcc)
    platform = os.environ.get("HIP_PLATFORM") or "unset (rocport passes HIP_PLATFORM=amd)"
    facts = {
        "path": hipcc,
        "hip_version": hip.group(1) if hip else "",
        "archs": archs,
        "clang_version": clang.group(1) if clang else "",
    }
    detail = (
        f"HIP {facts['hip_version'] or '?'}, clang {facts['clang_version'] or '?'}, "
        f"--offload-arch {', '.join(archs) or 'none'}; HIP_PLATFORM {platform}"
    )
    missing = [a for a in CANDIDATE_ARCHS if a not in archs]
    fix = (
        f"host hipcc cannot target {', '.join(missing)}: use the image (`rocport image build`)"
        if missing
        else ""
    )
    return Check(
        "hipcc (host)",
        bool(archs),
        detail,
        fix if archs else "hipcc compiles for no AMD target: install rocm-device-libs or use the image",
        facts,
    )


def check_nvcc() -> Check:
    """nvcc checks that ROCm fixes keep the CUDA build compiling."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return Check(
            "nvcc",
            False,
            "not found",
            "optional: install the CUDA toolkit so fixes are also checked against the CUDA build",
        )
    _, out = _run([nvcc, "--version"])
    release = re.search(r"release ([\d.]+), (V[\d.]+)", out)
    version = release.group(2) if release else "unknown version"
    return Check("nvcc", True, f"{version} at {nvcc}", facts={"path": nvcc, "version": version})


def check_docker() -> Check:
    """The Docker daemon every build and server launch runs in."""
    import docker
    from docker.errors import DockerException

    if shutil.which("docker") is None and not os.environ.get("DOCKER_HOST"):
        return Check(
            "Docker daemon", False, "docker not installed", "`apt-get install docker.io` (or `make demo`)"
        )
    try:
        client = docker.from_env(timeout=10)
        version = client.version().get("Version", "?")
    except DockerException as exc:
        return Check(
            "Docker daemon",
            False,
            f"not reachable ({type(exc).__name__})",
            "start it: `systemctl start docker`, or as root `dockerd --iptables=false --bridge=none &`",
        )
    return Check("Docker daemon", True, f"Docker {version} answering", facts={"version": version})


def check_images(docker_ok: bool) -> Check:
    """Whether a local ROCm build image exists, and which compiler and targets it has."""
    if not docker_ok:
        return Check("ROCm build image", False, "unknown: Docker is not reachable", "start Docker first")
    images = local_build_images()
    if not images:
        return Check(
            "ROCm build image",
            False,
            f"no {IMAGE_REPO} image",
            "`rocport image build` (about 2 minutes, Debian packages only)",
        )
    lines = [
        f"{img['tag']}: HIP {img['hip_version'] or '?'}, {img['clang_version'] or 'clang ?'}, "
        f"--offload-arch {', '.join(img['archs']) or '?'}"
        for img in images
    ]
    return Check("ROCm build image", True, "; ".join(lines), facts={"images": images})


def check_gpus() -> Check:
    """AMD GPUs (/dev/kfd and rocminfo) and, for the record, NVIDIA ones."""
    kfd = Path("/dev/kfd").exists()
    agents: list[str] = []
    if kfd and shutil.which("rocminfo"):
        code, out = _run(["rocminfo"], timeout=30)
        agents = sorted(set(re.findall(r"Name:\s+(gfx[0-9a-f]+)", out))) if code == 0 else []
    nvidia = sorted(str(p) for p in Path("/dev").glob("nvidia[0-9]*"))
    facts = {"kfd": kfd, "amd_agents": agents, "nvidia_devices": nvidia}
    if agents:
        return Check("GPUs", True, f"AMD: {', '.join(agents)} (/dev/kfd present)", facts=facts)
    detail = "no AMD GPU (/dev/kfd absent)" if not kfd else "/dev/kfd present but rocminfo lists no gfx agent"
    if nvidia:
        detail += f"; NVIDIA devices: {len(nvidia)}"
    return Check(
        "GPUs",
        False,
        detail,
        "compiles, rules and CPU fixtures work without one; serving a real model needs an AMD GPU "
        "(amdgpu driver loaded, /dev/kfd and /dev/dri visible)",
        facts,
    )


def check_llm() -> Check:
    """Whether an OpenAI-compatible endpoint is configured; the key's value is never read out."""
    base_url = os.environ.get("OPENAI_BASE_URL", "")
    has_key = bool(os.environ.get("OPENAI_API_KEY"))
    facts = {"base_url": base_url, "api_key_set": has_key}
    if not base_url and not has_key:
        return Check(
            "LLM endpoint",
            False,
            "not configured (OPENAI_BASE_URL and OPENAI_API_KEY unset)",
            "optional: set OPENAI_BASE_URL (any OpenAI-compatible server) and OPENAI_API_KEY; "
            "rules still fix what they know",
            facts,
        )
    where = base_url or "api.openai.com (default)"
    key = f"API key {'set' if has_key else 'not set'}"
    refused = _unreachable(base_url) if base_url else None
    if refused:
        return Check(
            "LLM endpoint",
            False,
            f"{where}, {key}: nothing answers ({refused})",
            "start the server or fix OPENAI_BASE_URL; a port run that needs the LLM stops there",
            facts,
        )
    return Check("LLM endpoint", True, f"{where}, {key}", facts=facts)


def _unreachable(base_url: str) -> str | None:
    """Why a TCP connection to the endpoint's host:port fails, or None when it connects (no request,
    so no key, is sent)."""
    import socket
    from urllib.parse import urlsplit

    url = urlsplit(base_url)
    if not url.hostname:
        return f"{base_url!r} is not a URL like http://HOST:PORT/v1"
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        with socket.create_connection((url.hostname, port), timeout=3):
            return None
    except OSError as exc:
        return exc.strerror or type(exc).__name__


def run_checks() -> list[Check]:
    """All checks, in the order a user reads them."""
    docker_check = check_docker()
    return [
        check_hipcc(),
        check_nvcc(),
        docker_check,
        check_images(docker_check.ok),
        check_gpus(),
        check_llm(),
    ]
