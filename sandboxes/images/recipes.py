"""Recipes for the local ROCm build images: which Debian suite, which packages, which targets to try."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

DEFAULT_MIRROR = "http://deb.debian.org/debian"
IMAGE_REPO = "rocport/rocm-build"

# Everything a framework build and the fixture server need, on top of the ROCm toolchain.
BASE_PACKAGES = (
    "build-essential",
    "make",
    "cmake",
    "ninja-build",
    "git",
    "ca-certificates",
    "procps",
    "util-linux",
    "python3",
    "python3-dev",
    "python3-numpy",
    "python3-venv",
    "python3-pip",
    "file",
)

# The offload targets rocport cares about: MI250 (gfx90a), MI300X (gfx942), MI355X (gfx950).
CANDIDATE_ARCHS = ("gfx90a", "gfx942", "gfx950")


@dataclass(frozen=True)
class ImageRecipe:
    """One buildable image: a Debian suite whose archive carries a given ROCm release."""

    name: str
    """Short name used on the command line and as the tag (the ROCm release)."""
    suite: str
    rocm_packages: tuple[str, ...]
    description: str
    extra_packages: tuple[str, ...] = field(default=BASE_PACKAGES)

    @property
    def tag(self) -> str:
        return f"{IMAGE_REPO}:{self.name}"

    @property
    def packages(self) -> tuple[str, ...]:
        return self.rocm_packages + self.extra_packages


RECIPES: dict[str, ImageRecipe] = {
    "6.4": ImageRecipe(
        name="6.4",
        suite="sid",
        rocm_packages=(
            "hipcc",
            "libamdhip64-dev",
            "rocm-device-libs-21",
            "rocminfo",
            "libhipcub-dev",
            "librocprim-dev",
            "librocthrust-dev",
            "libhipblaslt-dev",
        ),
        # sid's librccl-dev is still built against HIP 5 (libamdhip64-5) and cannot be installed.
        description="Debian sid: HIP 6.4, hipcc on clang 21 (gfx90a, gfx942, gfx950)",
    ),
    "5.7": ImageRecipe(
        name="5.7",
        suite="trixie",
        rocm_packages=(
            "hipcc",
            "libamdhip64-dev",
            "rocm-device-libs-17",
            "rocminfo",
            "libhipcub-dev",
            "librocprim-dev",
            "librocthrust-dev",
            "librccl-dev",
        ),
        description="Debian trixie: HIP 5.7, hipcc on clang 17 (gfx90a, gfx942)",
    ),
}
DEFAULT_RECIPE = "6.4"


def mirror() -> str:
    """The Debian mirror to build from; ROCPORT_DEBIAN_MIRROR overrides (e.g. a snapshot URL)."""
    return os.environ.get("ROCPORT_DEBIAN_MIRROR", DEFAULT_MIRROR)


def get_recipe(name: str) -> ImageRecipe:
    """The recipe called `name`, or a ValueError listing the known ones."""
    if name not in RECIPES:
        known = ", ".join(sorted(RECIPES))
        raise ValueError(f"unknown image recipe {name!r}; known: {known}")
    return RECIPES[name]
