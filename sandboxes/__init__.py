"""Where commands run: the Sandbox protocol and its backends."""
from sandboxes.base import CommandResult, Sandbox, SandboxError, Service, truncate_middle
from sandboxes.local import LocalSandbox, LocalService, ServiceNotReady

__all__ = ["CommandResult", "LocalSandbox", "LocalService", "Sandbox", "SandboxError", "Service",
           "ServiceNotReady", "truncate_middle"]
