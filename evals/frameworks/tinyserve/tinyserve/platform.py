"""Which accelerator platform tinyserve runs on (decides optional CUDA-only dependencies)."""
from __future__ import annotations

import os
from pathlib import Path


def is_cuda() -> bool:
    """NVIDIA: a CUDA device node, or TINYSERVE_PLATFORM=cuda."""
    forced = os.environ.get("TINYSERVE_PLATFORM")
    if forced:
        return forced == "cuda"
    return Path("/dev/nvidiactl").exists()


def is_rocm() -> bool:
    """AMD: the ROCm kernel driver node, or TINYSERVE_PLATFORM=rocm."""
    forced = os.environ.get("TINYSERVE_PLATFORM")
    if forced:
        return forced == "rocm"
    return Path("/dev/kfd").exists()
