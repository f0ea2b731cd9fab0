"""Launch a framework's server in a sandbox, wait for health, send one smoke completion, stop it.

The proof that a model loads: the server from the profile's launch template answers `/health` (or
`/v1/models`) and completes a prompt. A server that dies or never answers has its log diagnosed like
a build log (weight-name KeyErrors, shape mismatches, missing CUDA-only modules), and no process is
left behind: the service's process group is TERMed, then KILLed, then checked.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import asdict, dataclass, field
from typing import Any

from sandboxes.base import Sandbox, Service
from sandboxes.health import http_ok
from sandboxes.local import LocalService
from tools.records import Failure
from tools.serve_profile import ServeProfile, profile_options

EXCERPT_LINES = 40
STOP_GRACE_S = 10.0


class ServeError(ValueError):
    """The launch could not be attempted (bad template, unreachable sandbox); one line saying what to do."""


@dataclass
class ServeResult:
    """What one launch did: readiness, the smoke completion, diagnosed failures and the log."""

    command: str
    base_url: str = ""
    """http://host:port of the server (an OpenAI-compatible API once ready)."""
    model: str = ""
    """The model id the server lists on /v1/models (what requests must name)."""
    ready: bool = False
    health_s: float | None = None
    """Seconds from launch until the health/models endpoint answered 200."""
    smoke_ok: bool = False
    smoke_text: str = ""
    failures: list[Failure] = field(default_factory=list)
    reason: str = ""
    """Why the server is not proven (empty when ready and the smoke completion worked)."""
    log_path: str | None = None
    log_excerpt: str = ""
    exit_code: int | None = None

    @property
    def ok(self) -> bool:
        return self.ready and self.smoke_ok

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def launch_command(
    template: str, *, model_path: str, port: int, tp: int = 1, dp: int = 1, host: str = "127.0.0.1"
) -> str:
    """The profile's launch template with {model_path}, {port}, {tp}, {dp}, {host} filled in."""
    try:
        return template.format(model_path=model_path, port=port, tp=tp, dp=dp, host=host)
    except (KeyError, IndexError, ValueError) as exc:
        raise ServeError(
            f"launch template {template!r} has an unknown or malformed placeholder ({exc}); "
            f"use only {{model_path}}, {{port}}, {{tp}}, {{dp}}, {{host}}"
        ) from exc


def _request(
    host: str, port: int, method: str, path: str, body: dict[str, Any] | None = None, timeout: float = 30
) -> tuple[int, object]:
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        payload = json.dumps(body).encode() if body is not None else None
        conn.request(method, path, body=payload, headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        raw = resp.read()
    finally:
        conn.close()
    try:
        return resp.status, json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return resp.status, raw.decode("utf-8", "replace")


def _wait_ready(service: Service, host: str, port: int, paths: list[str], timeout: float) -> str | None:
    """None once any of `paths` answers 200; else why not (exited, or the timeout)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not service.alive():
            return "the server exited before it became ready"
        if any(http_ok(host, port, p) for p in paths):
            return None
        time.sleep(0.2)
    return f"the server did not answer {' or '.join(paths)} on {host}:{port} within {timeout:.0f}s"


def _served_model(host: str, port: int, models_path: str, fallback: str) -> str:
    """The first model id the server lists (what /v1/completions wants), else the model path."""
    try:
        status, data = _request(host, port, "GET", models_path, timeout=10)
    except (OSError, http.client.HTTPException):
        return fallback
    if status == 200 and isinstance(data, dict) and data.get("data"):
        first = data["data"][0]
        model_id = first.get("id") if isinstance(first, dict) else None
        if isinstance(model_id, str):
            return model_id
    return fallback


def smoke_completion(
    host: str, port: int, model: str, prompt: str, max_tokens: int = 8, timeout: float = 120
) -> tuple[bool, str]:
    """POST /v1/completions; (ok, generated text or what went wrong)."""
    body = {"model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0}
    try:
        status, data = _request(host, port, "POST", "/v1/completions", body, timeout=timeout)
    except (OSError, http.client.HTTPException) as exc:
        return False, f"smoke completion failed: {exc}"
    if status != 200:
        return False, f"smoke completion answered HTTP {status}: {str(data)[:300]}"
    choices = data.get("choices") if isinstance(data, dict) else None
    if not choices or not isinstance(choices[0], dict) or not isinstance(choices[0].get("text"), str):
        return False, f"smoke completion has no choices[0].text: {str(data)[:300]}"
    return True, choices[0]["text"]


def _diagnose(log: str, repo_root: str | None) -> list[Failure]:
    """Failures in the server log; the raw tail as an `unknown` failure when nothing is recognised."""
    try:
        from tools.diagnose import diagnose_text
    except ImportError:  # diagnosis is optional for serving; the raw excerpt still reaches the report
        failures: list[Failure] = []
    else:
        failures = diagnose_text(log, repo_root=repo_root, source="server")
    if failures:
        return failures
    tail = "\n".join(log.splitlines()[-EXCERPT_LINES:])
    last = next((ln.strip() for ln in reversed(log.splitlines()) if ln.strip()), "no output")
    return [
        Failure(
            kind="unknown",
            message=last[:500],
            excerpt=tail,
            source="server",
            signature=f"unknown:server:{last[:120]}",
        )
    ]


def _stop(service: Service, grace_s: float) -> int | None:
    """SIGTERM then SIGKILL (the sandbox does both); then make sure the process group is gone."""
    code = service.stop(grace_s=grace_s)
    if isinstance(service, LocalService):
        try:
            os.killpg(service.pid, 0)
        except ProcessLookupError:
            return code
        os.killpg(service.pid, signal.SIGKILL)  # a grandchild survived the sandbox's stop
    return code


@contextmanager
def running_server(
    sandbox: Sandbox,
    template: str,
    *,
    model_path: str,
    port: int | None = None,
    tp: int = 1,
    dp: int = 1,
    host: str = "127.0.0.1",
    health_path: str = "/health",
    models_path: str = "/v1/models",
    ready_timeout: float = 600,
    smoke_prompt: str = "The capital of France is",
    smoke_max_tokens: int = 8,
    env: dict[str, str] | None = None,
    name: str = "server",
    stop_grace_s: float = STOP_GRACE_S,
) -> Iterator[ServeResult]:
    """Launch and smoke-check; the server stays up inside the `with` block (e.g. for a benchmark at
    `result.base_url`) and is stopped on exit, when the log is captured and a failed load diagnosed.

    A sandbox with a `publish(port)` (DockerSandbox) makes the port answer on this machine's loopback.
    """
    port = port or free_port(host)
    publish = getattr(sandbox, "publish", None)
    with publish(port) if publish else nullcontext():
        yield from _serve(
            sandbox,
            template,
            port,
            model_path=model_path,
            tp=tp,
            dp=dp,
            host=host,
            health_path=health_path,
            models_path=models_path,
            ready_timeout=ready_timeout,
            smoke_prompt=smoke_prompt,
            smoke_max_tokens=smoke_max_tokens,
            env=env,
            name=name,
            stop_grace_s=stop_grace_s,
        )


def _serve(
    sandbox: Sandbox,
    template: str,
    port: int,
    *,
    model_path: str,
    tp: int,
    dp: int,
    host: str,
    health_path: str,
    models_path: str,
    ready_timeout: float,
    smoke_prompt: str,
    smoke_max_tokens: int,
    env: dict[str, str] | None,
    name: str,
    stop_grace_s: float,
) -> Iterator[ServeResult]:
    cmd = launch_command(template, model_path=model_path, port=port, tp=tp, dp=dp, host=host)
    result = ServeResult(command=cmd, base_url=f"http://{host}:{port}")
    start = time.monotonic()
    service = sandbox.start(cmd, name=name, port=None, env=env)  # we wait ourselves: either endpoint
    try:
        problem = _wait_ready(service, host, port, [health_path, models_path], ready_timeout)
        if problem is None:
            result.ready, result.health_s = True, round(time.monotonic() - start, 3)
            result.model = _served_model(host, port, models_path, model_path)
            result.smoke_ok, text = smoke_completion(host, port, result.model, smoke_prompt, smoke_max_tokens)
            result.smoke_text, result.reason = (text, "") if result.smoke_ok else ("", text)
        else:
            result.reason = problem
        yield result
    finally:
        result.exit_code = _stop(service, stop_grace_s)
        log = service.logs()
        result.log_path = str(getattr(service, "log_path", "") or "") or None
        result.log_excerpt = "\n".join(log.splitlines()[-EXCERPT_LINES:])
        if not result.ok:
            result.failures = _diagnose(log, getattr(sandbox, "workdir", None))


def serve_check(sandbox: Sandbox, template: str, **kwargs: Any) -> ServeResult:
    """Launch, wait for health, smoke-complete, stop, diagnose a failed load; never leaves a process.

    Keyword arguments are those of `running_server`.
    """
    with running_server(sandbox, template, **kwargs) as result:
        pass
    return result


def serve_profile(
    sandbox: Sandbox, profile: ServeProfile, *, model_path: str, arch: str = "gfx942", **kwargs: Any
) -> ServeResult:
    """`serve_check` with the launch template, endpoints, timeout, prompt and env ({arch} filled) of a Profile."""
    return serve_check(
        sandbox, profile.launch.command, model_path=model_path, **profile_options(profile, arch, kwargs)
    )
