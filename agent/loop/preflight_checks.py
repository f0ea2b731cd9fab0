"""Checks of a port job against this machine, before anything is cloned or built (each one line)."""

from __future__ import annotations

import errno
import socket

from agent.config import PortJob


def arch_problem(arch: str, image: str | None, what: str = "target.arch") -> str | None:
    """Why `arch` cannot be built in `image` (its labels list the targets its hipcc compiles for),
    or None when it can or nobody knows (no daemon, an image without rocport's labels)."""
    if not image:
        return None
    from sandboxes.images.listing import label_archs

    archs = label_archs(image)
    if archs is None or arch.split(":")[0] in archs:
        return None
    return (
        f"{what} {arch} is not a target of {image} (its hipcc compiles for {', '.join(archs)}): "
        f"pick one of those, or an image built for {arch}"
    )


def port_problem(port: int | None) -> str | None:
    """Why a fixed serve.port cannot be used: something already listens on it here."""
    if port is None:
        return None
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError as exc:
            why = "in use" if exc.errno == errno.EADDRINUSE else exc.strerror
            return f"serve.port {port} is not free on 127.0.0.1 ({why}): pick a free port or drop serve.port"
    return None


def job_problems(job: PortJob, image: str | None) -> list[str]:
    """Every preflight problem of the job (empty when it may start)."""
    problems = [arch_problem(job.target.arch, image if job.sandbox.backend == "docker" else None)]
    if job.model.path:
        problems.append(port_problem(job.serve.port))
    return [p for p in problems if p]
