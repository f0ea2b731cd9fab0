"""Shared fixtures. Real parts only: a missing daemon or compiler skips here, fails in CI (CI=true)."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
REPO_ROOT = Path(__file__).resolve().parent.parent
ROCM_IMAGE = os.environ.get("ROCPORT_TEST_IMAGE", "rocport/rocm-build:6.4")


def require(condition: bool, what: str) -> None:
    """Skip the test when a real part is missing, except in CI where it is a failure."""
    if condition:
        return
    if IN_CI:
        pytest.fail(f"{what} is required in CI (CI=true) but missing", pytrace=False)
    pytest.skip(f"{what} not available")


def _docker_ok() -> bool:
    if not shutil.which("docker"):
        return False
    return subprocess.run(["docker", "info"], capture_output=True, timeout=30).returncode == 0


def _image_ok(image: str) -> bool:
    return subprocess.run(["docker", "image", "inspect", image], capture_output=True, timeout=30).returncode == 0


@pytest.fixture(scope="session")
def docker_daemon() -> None:
    require(_docker_ok(), "a running Docker daemon")


@pytest.fixture(scope="session")
def rocm_image(docker_daemon) -> str:
    """The local ROCm build image (built by `rocport image build`)."""
    require(_image_ok(ROCM_IMAGE), f"the local ROCm build image {ROCM_IMAGE} (run `rocport image build`)")
    return ROCM_IMAGE


@pytest.fixture(scope="session")
def hipcc() -> str:
    """A host hipcc on the AMD platform (ROCm 5.2 from Debian here: gfx90a/gfx908 only)."""
    path = shutil.which("hipcc")
    require(path is not None, "hipcc")
    os.environ.setdefault("HIP_PLATFORM", "amd")
    return path


@pytest.fixture(scope="session")
def nvcc() -> str:
    path = shutil.which("nvcc")
    require(path is not None, "nvcc")
    return path


@pytest.fixture
def git_repo(tmp_path: Path):
    """A factory for real git repos: git_repo({"path": "text"}) -> Path, one commit on main."""

    def make(files: dict[str, str], name: str = "repo") -> Path:
        root = tmp_path / name
        root.mkdir()
        for rel, text in files.items():
            p = root / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
        env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
               "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
        for cmd in (["git", "init", "-q", "-b", "main"], ["git", "add", "-A"],
                    ["git", "commit", "-q", "-m", "initial"]):
            subprocess.run(cmd, cwd=root, check=True, env=env)
        return root

    return make
