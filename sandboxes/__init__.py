"""Where commands run: the Sandbox protocol and its backends.

The names below load on first use (PEP 562): `from sandboxes.base import SandboxError` then costs
only base.py. The Docker backend pulls in the docker SDK and requests (~70 ms of a CLI start), which
commands that never touch a container (`rocport show`, `diagnose`) do not need."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sandboxes.base import CommandResult, Sandbox, SandboxError, Service, truncate_middle
    from sandboxes.docker import DockerSandbox
    from sandboxes.docker_service import DockerService
    from sandboxes.local import LocalSandbox, LocalService, ServiceNotReady
    from sandboxes.orphans import cleanup_orphans

_HOMES = {
    "CommandResult": "base",
    "Sandbox": "base",
    "SandboxError": "base",
    "Service": "base",
    "truncate_middle": "base",
    "DockerSandbox": "docker",
    "DockerService": "docker_service",
    "LocalSandbox": "local",
    "LocalService": "local",
    "ServiceNotReady": "local",
    "cleanup_orphans": "orphans",
}

__all__ = [
    "CommandResult",
    "DockerSandbox",
    "DockerService",
    "LocalSandbox",
    "LocalService",
    "Sandbox",
    "SandboxError",
    "Service",
    "ServiceNotReady",
    "cleanup_orphans",
    "truncate_middle",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:  # a submodule (`from sandboxes import compile_share`) is imported by the caller
        raise AttributeError(f"module 'sandboxes' has no attribute {name!r}")
    value = getattr(import_module(f"sandboxes.{home}"), name)
    globals()[name] = value
    return value
