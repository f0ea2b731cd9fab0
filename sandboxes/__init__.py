"""Where commands run: the Sandbox protocol and its backends."""

from sandboxes.base import CommandResult, Sandbox, SandboxError, Service, truncate_middle
from sandboxes.docker import DockerSandbox
from sandboxes.docker_service import DockerService
from sandboxes.local import LocalSandbox, LocalService, ServiceNotReady
from sandboxes.orphans import cleanup_orphans

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
