"""Prove an image builds ROCm code: compile the bundled HIP kernel into a shared library inside it."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from sandboxes.base import CommandResult
from sandboxes.docker import DockerSandbox
from sandboxes.images.listing import local_build_images
from sandboxes.images.recipes import CANDIDATE_ARCHS

SAMPLE = Path(__file__).with_name("samples") / "vector_add.hip"
LIBRARY = "libvector_add.so"


@dataclass
class SampleCompile:
    """What compiling the sample kernel in an image produced."""

    image: str
    archs: list[str]
    result: CommandResult
    embedded_archs: list[str] = field(default_factory=list)
    """Targets whose code objects are really inside the built library."""
    library_bytes: int = 0

    @property
    def ok(self) -> bool:
        return self.result.ok and sorted(self.embedded_archs) == sorted(self.archs)


def image_archs(image: str) -> list[str]:
    """The targets an image's labels record, or rocport's candidates for images without labels."""
    for img in local_build_images():
        if img["tag"] == image and img["archs"]:
            archs: list[str] = img["archs"]
            return archs
    return list(CANDIDATE_ARCHS)


def compile_sample(image: str, archs: list[str] | None = None, timeout: float = 600) -> SampleCompile:
    """Compile samples/vector_add.hip for `archs` into a shared library in a networkless container."""
    archs = archs or image_archs(image)
    with tempfile.TemporaryDirectory(prefix="rocport-sample-") as tmp:
        shutil.copy(SAMPLE, tmp)
        flags = " ".join(f"--offload-arch={a}" for a in archs)
        with DockerSandbox(image, tmp, mem_limit="8g") as sandbox:
            result = sandbox.run(
                f"hipcc -DUSE_ROCM {flags} -fPIC -shared {SAMPLE.name} -o {LIBRARY}", timeout=timeout
            )
        library = Path(tmp, LIBRARY)
        data = library.read_bytes() if result.ok and library.exists() else b""
    # Each target's code object is bundled under its triple-and-target id in the fat binary.
    embedded = [a for a in archs if f"amdgcn-amd-amdhsa--{a}".encode() in data]
    return SampleCompile(
        image=image, archs=archs, result=result, embedded_archs=embedded, library_bytes=len(data)
    )
