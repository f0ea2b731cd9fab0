"""Build a local ROCm build image offline from Debian packages: mmdebstrap, probe, `docker import`.

The probe runs inside the new root filesystem before it is imported, so the image's labels say
which compiler it carries and which --offload-arch targets that compiler really accepts.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from sandboxes.images.recipes import CANDIDATE_ARCHS, ImageRecipe, mirror

PROBE_SCRIPT = Path(__file__).with_name("probe.sh")
LABEL_PREFIX = "rocport."
# Debian's hipcc lives in /usr/bin and finds its device libraries by itself (setting ROCM_PATH=/usr
# breaks that lookup); it still needs the platform. `docker import` sets no PATH, so set one.
IMAGE_ENV = {
    "HIP_PLATFORM": "amd",
    "HIPCC": "/usr/bin/hipcc",
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
}
# Docs and man pages are a third of the tree and no build reads them.
DPKG_EXCLUDES = (
    "path-exclude=/usr/share/man/*",
    "path-exclude=/usr/share/doc/*",
    "path-include=/usr/share/doc/*/copyright",
    "path-exclude=/usr/share/locale/*",
)


class ImageBuildError(Exception):
    """The image could not be built; the message says what to do."""


@dataclass
class BuiltImage:
    """What `build_image` produced."""

    tag: str
    recipe: str
    facts: dict[str, str] = field(default_factory=dict)
    duration_s: float = 0.0

    @property
    def offload_archs(self) -> list[str]:
        return [a for a in self.facts.get("offload_archs", "").split(",") if a]


def _check_tools() -> None:
    if os.geteuid() != 0:
        raise ImageBuildError(
            "building an image needs root (mmdebstrap root mode); rerun as root or via sudo"
        )
    for tool, pkg in (("mmdebstrap", "mmdebstrap"), ("docker", "docker.io")):
        if shutil.which(tool) is None:
            raise ImageBuildError(f"{tool} not found; install it with `apt-get install -y {pkg}`")


def mmdebstrap_command(
    recipe: ImageRecipe, tarball: Path, probe_out: Path, archs: tuple[str, ...] = CANDIDATE_ARCHS
) -> list[str]:
    """The mmdebstrap invocation for `recipe`, writing a tarball and the probe's key=value lines."""
    cmd = [
        "mmdebstrap",
        "--mode=root",
        "--variant=apt",
        "--format=tar",
        # The mirror here serves a frozen snapshot whose Release files have expired.
        '--aptopt=Acquire::Check-Valid-Until "false"',
        "--include=" + ",".join(recipe.packages),
    ]
    cmd += [f"--dpkgopt={opt}" for opt in DPKG_EXCLUDES]
    cmd += [
        f"--customize-hook=upload {PROBE_SCRIPT} /tmp/rocport-probe.sh",
        f'--customize-hook=chroot "$1" sh /tmp/rocport-probe.sh {" ".join(archs)} > {probe_out}',
        f'--customize-hook=cp {probe_out} "$1/etc/rocport-image"',
        '--customize-hook=rm -f "$1/tmp/rocport-probe.sh"',
    ]
    cmd += [recipe.suite, str(tarball), mirror()]
    return cmd


def parse_probe(text: str) -> dict[str, str]:
    """key=value lines from probe.sh -> dict (values may contain '=')."""
    facts = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            facts[key.strip()] = value.strip()
    return facts


def import_changes(recipe: ImageRecipe, facts: dict[str, str]) -> list[str]:
    """Dockerfile instructions for `docker import --change`: labels, ENV, CMD."""
    labels = {
        f"{LABEL_PREFIX}recipe": recipe.name,
        f"{LABEL_PREFIX}suite": recipe.suite,
        f"{LABEL_PREFIX}built": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    labels.update({f"{LABEL_PREFIX}{k}": v for k, v in facts.items()})
    changes = [f"LABEL {key}={json.dumps(value)}" for key, value in labels.items()]
    changes += [f"ENV {key}={value}" for key, value in IMAGE_ENV.items()]
    changes += ['CMD ["bash"]']
    return changes


def _run_streaming(cmd: list[str], log: Callable[[str], None]) -> tuple[int, list[str]]:
    """Run cmd, hand each output line to log, keep the last lines for an error message."""
    tail: list[str] = []
    with subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace"
    ) as proc:
        assert proc.stdout is not None  # noqa: S101 (narrowing: stdout=PIPE always sets it)
        for line in proc.stdout:
            log(line.rstrip("\n"))
            tail = ([*tail, line.rstrip("\n")])[-15:]
    return proc.returncode, tail


def _image_id(tag: str) -> str | None:
    proc = subprocess.run(
        ["docker", "image", "inspect", "--format", "{{.Id}}", tag],
        capture_output=True,
        text=True,
        check=False,
    )
    return proc.stdout.strip() if proc.returncode == 0 else None


def _drop_previous(previous: str | None, tag: str, log: Callable[[str], None]) -> None:
    """Remove the image the new build replaced under `tag`, unless containers still use it."""
    if previous is None or previous == _image_id(tag):
        return
    proc = subprocess.run(["docker", "rmi", previous], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        log(f"kept the previous {tag} image {previous[:19]}: {proc.stderr.strip()}")


def _first_cause(lines: list[str]) -> str:
    """The line of an mmdebstrap/apt log that says why it failed (an unmet dependency, the first E:)."""
    for marker in (" : Depends: ", "E: "):
        hit = next((ln.strip() for ln in lines if marker in ln), None)
        if hit:
            return hit
    return next((ln for ln in reversed(lines) if ln.strip()), "no output")


def build_image(
    recipe: ImageRecipe,
    *,
    tag: str | None = None,
    log: Callable[[str], None] = lambda _: None,
    workdir: Path | None = None,
) -> BuiltImage:
    """Build `recipe` into a local Docker image and return its tag and probed facts."""
    _check_tools()
    tag = tag or recipe.tag
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="rocport-image-", dir=workdir) as tmp:
        tarball, probe_out = Path(tmp) / "rootfs.tar", Path(tmp) / "probe.txt"
        code, tail = _run_streaming(mmdebstrap_command(recipe, tarball, probe_out), log)
        if code != 0:
            last = _first_cause(tail)
            raise ImageBuildError(
                f"mmdebstrap failed for {recipe.suite} (exit {code}): {last}; "
                f"check the mirror {mirror()} (set ROCPORT_DEBIAN_MIRROR) and disk space"
            )
        facts = parse_probe(probe_out.read_text()) if probe_out.exists() else {}
        if not facts.get("offload_archs"):
            raise ImageBuildError(
                f"the built {recipe.suite} tree has a hipcc that compiles for none of "
                f"{', '.join(CANDIDATE_ARCHS)}; probe said: {facts or 'nothing'}"
            )
        previous = _image_id(tag)
        cmd = ["docker", "import"]
        for change in import_changes(recipe, facts):
            cmd += ["--change", change]
        code, tail = _run_streaming([*cmd, str(tarball), tag], log)
        if code != 0:
            raise ImageBuildError(
                f"docker import failed (exit {code}): {tail[-1] if tail else ''}; "
                "is the Docker daemon running? (`docker info`)"
            )
    _drop_previous(previous, tag, log)
    return BuiltImage(tag=tag, recipe=recipe.name, facts=facts, duration_s=time.monotonic() - started)
