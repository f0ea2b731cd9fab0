"""Labels that tie a container to the rocport process that made it, and cleanup of orphans.

A process killed with -9 cannot remove its containers; the next `rocport` start does, for every
container whose owner process is gone (same host, pid dead or reused by another process).
"""

from __future__ import annotations

import os
import socket
from typing import TYPE_CHECKING

from docker.errors import APIError, DockerException, NotFound
from requests.exceptions import RequestException

from sandboxes.watchdog import process_start

if TYPE_CHECKING:
    from docker import DockerClient
    from docker.models.containers import Container

LABEL_OWNER = "rocport.owner"
LABEL_OWNER_START = "rocport.owner_start"
LABEL_HOST = "rocport.host"
LABEL_SESSION = "rocport.session"
LABEL_WORKDIR = "rocport.workdir"


def owner_labels(session: str, workdir: str) -> dict[str, str]:
    """Labels for a container owned by this process."""
    pid = os.getpid()
    return {
        LABEL_OWNER: str(pid),
        LABEL_OWNER_START: process_start(pid),
        LABEL_HOST: socket.gethostname(),
        LABEL_SESSION: session,
        LABEL_WORKDIR: workdir,
    }


def owner_alive(labels: dict[str, str]) -> bool:
    """Whether the process named by a container's labels still runs (on this host, same start time)."""
    if labels.get(LABEL_HOST) != socket.gethostname():
        return True  # another machine's container: not ours to judge
    try:
        pid = int(labels.get(LABEL_OWNER, ""))
    except ValueError:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, owned by another user
    recorded = labels.get(LABEL_OWNER_START, "")
    return not recorded or process_start(pid) in ("", recorded)


def _labelled(client: DockerClient) -> list[Container]:
    """rocport's containers. docker-py inspects each listed container, so one removed between the
    listing and its inspection (another run ending) raises NotFound: list again."""
    for _ in range(5):
        try:
            return client.containers.list(all=True, filters={"label": LABEL_OWNER})
        except NotFound:
            continue
    return []


def cleanup_orphans(client: DockerClient | None = None) -> list[str]:
    """Remove rocport containers whose owner process is dead; returns their names."""
    if client is None:
        import docker  # imported here so a CLI start without Docker costs nothing more

        try:
            client = docker.from_env(timeout=10)
            client.ping()
        except (DockerException, RequestException):
            return []  # no daemon (or none answering in time), so no containers to clean now
    removed = []
    for container in _labelled(client):
        if owner_alive(container.labels):
            continue
        try:
            container.remove(force=True)
        except NotFound:
            continue  # removed meanwhile by its owner or another cleanup
        except APIError as exc:
            if exc.status_code == 409:  # another rocport start is removing it right now
                continue
            raise
        except RequestException:
            continue  # the daemon is slow to stop it (a loaded machine): the next rocport start tries again
        removed.append(container.name or container.short_id)
    return removed
