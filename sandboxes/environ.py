"""What a sandboxed command may see of this process's environment: an allow-list, never a deny-list.

A build, a test or a model server runs code from the framework and from the LLM. Tokens and keys
in the user's shell (GITHUB_TOKEN, HF_TOKEN, GH_PAT, AWS_SECRET_ACCESS_KEY, ...) must never reach it,
whatever they are called. So only names a toolchain needs pass, and even those are dropped when
their name says credential.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

ALLOWED_NAMES = frozenset(
    {
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "SHELL",
        "LANG",
        "LANGUAGE",
        "TERM",
        "TZ",
        "TMPDIR",
        "PYTHONPATH",
        "VIRTUAL_ENV",
        "CC",
        "CXX",
        "CUDAHOSTCXX",
        "HF_HOME",
        "HF_HUB_CACHE",
        "HF_HUB_OFFLINE",
        "TRANSFORMERS_CACHE",
        "XDG_CACHE_HOME",
    }
)
ALLOWED_PREFIXES = (
    "LC_",
    "HIP_",
    "HIPCC_",
    "ROCM_",
    "HSA_",
    "HCC_",
    "CUDA_",
    "NVCC_",
    "PYTORCH_",
    "TORCH_",
    "TRITON_",
    "MIOPEN_",
    "NCCL_",
    "RCCL_",
    "OMP_",
    "VLLM_",
    "SGLANG_",
)
"""Toolchain, GPU runtime and serving-framework settings; a credential under these prefixes is still dropped."""
_SECRET = re.compile(
    r"KEY|TOKEN|SECRET|PASSW|PWD|CREDENTIAL|AUTH|COOKIE|SESSION|(^|_)PAT(_|$)|PRIVATE|CERT", re.IGNORECASE
)


def looks_secret(name: str) -> bool:
    """True for a variable name that says it holds a credential (GH_PAT, NPM_AUTH, DB_PASSWORD, ...)."""
    return bool(_SECRET.search(name))


def allowed(name: str) -> bool:
    """True when a host variable of this name may enter a sandbox."""
    if looks_secret(name):
        return False
    return name in ALLOWED_NAMES or name.upper().startswith(ALLOWED_PREFIXES)


def sandbox_environ(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The host variables a sandboxed command inherits (from os.environ unless given)."""
    source = os.environ if environ is None else environ
    return {k: v for k, v in source.items() if allowed(k)}
