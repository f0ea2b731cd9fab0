"""Labels that tie a container to the rocport process that made it, and cleanup of orphans.

A process killed with -9 cannot remove its containers; the next `rocport` start does, for every
container whose owner process is gone (same host, pid dead or reused by another process). Most starts
find none: the labels are read with one request on the daemon's unix socket, and the Docker SDK (~0.13 s
of CPU to import, with requests and urllib3) is loaded only when there is an orphan to remove.
"""

from __future__ import annotations

import os
import socket
from typing import TYPE_CHECKING

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


def _listed_labels(timeout: float = 10) -> list[dict[str, str]] | None:
    """The labels of rocport's containers, from one `GET /containers/json` on the daemon's unix socket
    (DOCKER_HOST's, else /var/run/docker.sock); [] when no daemon answers there (nothing to clean now);
    None when this cannot tell (another kind of DOCKER_HOST, an answer it does not expect): ask the SDK."""
    import json
    from urllib.parse import quote

    host = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
    if not host.startswith("unix://"):
        return None
    query = quote(json.dumps({"label": [LABEL_OWNER]}))
    request = f"GET /containers/json?all=1&filters={query} HTTP/1.0\r\nHost: docker\r\n\r\n".encode()
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(timeout)
            conn.connect(host[len("unix://") :])
            conn.sendall(request)
            answer = b"".join(iter(lambda: conn.recv(65536), b""))  # HTTP/1.0: the daemon closes at the end
    except OSError:
        return []  # no daemon there, or none answering in time: as the SDK's ping would find
    head, _, body = answer.partition(b"\r\n\r\n")
    if not head.startswith((b"HTTP/1.0 200", b"HTTP/1.1 200")):
        return None
    try:
        listed = json.loads(body)
        return [dict(c.get("Labels") or {}) for c in listed]
    except (ValueError, AttributeError, TypeError):
        return None


def _labelled(client: DockerClient) -> list[Container]:
    """rocport's containers. docker-py inspects each listed container, so one removed between the
    listing and its inspection (another run ending) raises NotFound: list again."""
    from docker.errors import NotFound

    for _ in range(5):
        try:
            return client.containers.list(all=True, filters={"label": LABEL_OWNER})
        except NotFound:
            continue
    return []


def _sdk_client() -> DockerClient | None:
    """The Docker SDK's client of DOCKER_HOST's daemon, or None when none answers in time."""
    import docker
    from docker.errors import DockerException
    from requests.exceptions import RequestException

    try:
        client = docker.from_env(timeout=10)
        client.ping()
    except (DockerException, RequestException):
        return None
    return client


def cleanup_orphans(client: DockerClient | None = None) -> list[str]:
    """Remove rocport containers whose owner process is dead; returns their names."""
    if client is None:
        listed = _listed_labels()
        if listed is not None and all(owner_alive(labels) for labels in listed):
            return []  # no orphan: the SDK is not needed
        client = _sdk_client()
        if client is None:
            return []  # no daemon (or none answering in time), so no containers to clean now
    from docker.errors import APIError, NotFound
    from requests.exceptions import RequestException

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
