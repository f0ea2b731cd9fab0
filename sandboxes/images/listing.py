"""What ROCm images exist: rocport's local build images (facts from their labels) and the official
ones users pull (from catalog.yaml), marked present when pulled."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from sandboxes.images.recipes import IMAGE_REPO

if TYPE_CHECKING:
    from docker import DockerClient
    from docker.models.images import Image

CATALOG = Path(__file__).with_name("catalog.yaml")


@dataclass
class ImageInfo:
    """One image row: where it comes from, its ROCm, and the targets it covers."""

    image: str
    kind: str
    """'local build' for rocport's images; 'base', 'sglang' or 'vllm' for official ones."""
    rocm: str
    targets: list[str]
    present: bool
    note: str = ""
    facts: dict[str, Any] = field(default_factory=dict)


def _labels_facts(image: Image, tag: str) -> dict[str, Any]:
    labels = image.labels or {}

    def split(key: str) -> list[str]:
        return [a for a in labels.get(key, "").split(",") if a]

    return {
        "tag": tag,
        "clang_version": labels.get("rocport.clang_version", ""),
        "hip_version": labels.get("rocport.hip_version", ""),
        "rocm_version": labels.get("rocport.rocm_version", ""),
        "archs": split("rocport.offload_archs"),
        "hipcub_archs": split("rocport.hipcub_archs"),
        "suite": labels.get("rocport.suite", ""),
        "size_bytes": image.attrs.get("Size", 0),
    }


def local_build_images(client: DockerClient | None = None) -> list[dict[str, Any]]:
    """rocport build images present locally, with the compiler facts recorded in their labels."""
    if client is None:
        client = _client()
    if client is None:
        return []
    found = [_labels_facts(image, tag) for image in client.images.list(name=IMAGE_REPO) for tag in image.tags]
    return sorted(found, key=lambda img: img["tag"], reverse=True)


def label_archs(image: str) -> list[str] | None:
    """The targets a rocport image's labels say its hipcc compiles for (probed when it was built);
    None when that is unknown: no daemon, the image is not here, or it has no such label."""
    from docker.errors import DockerException

    client = _client()
    if client is None:
        return None
    try:
        labels = client.images.get(image).labels or {}
    except DockerException:
        return None
    archs = [a for a in labels.get("rocport.offload_archs", "").split(",") if a]
    return archs or None


def _client() -> DockerClient | None:
    import docker
    from docker.errors import DockerException

    try:
        client = docker.from_env(timeout=10)
        client.ping()
    except DockerException:
        return None  # no daemon: nothing is present locally
    return client


def catalog() -> list[dict[str, Any]]:
    """The official images listed in catalog.yaml."""
    images: list[dict[str, Any]] = yaml.safe_load(CATALOG.read_text())
    return images


def list_images() -> list[ImageInfo]:
    """Local rocport build images first, then the official pullable ones."""
    client = _client()
    rows = [
        ImageInfo(
            image=img["tag"],
            kind="local build",
            rocm=img["rocm_version"] or img["hip_version"],
            targets=img["archs"],
            present=True,
            note=f"{img['clang_version']}; hipcub headers: {', '.join(img['hipcub_archs']) or '?'}",
            facts=img,
        )
        for img in local_build_images(client)
    ]
    pulled = {tag for image in client.images.list() for tag in image.tags} if client else set()
    rows += [
        ImageInfo(
            image=entry["image"],
            kind=entry["kind"],
            rocm=str(entry["rocm"]),
            targets=list(entry["targets"]),
            present=entry["image"] in pulled,
            note=entry["note"],
        )
        for entry in catalog()
    ]
    return rows
