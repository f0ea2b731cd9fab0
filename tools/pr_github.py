"""GitHub for `rocport pr --open`: the token (GITHUB_TOKEN, GH_TOKEN or the GitHub CLI's stored login)
and the REST calls that open a draft PR, then label it and request reviewers. Nothing here prints or
stores the token; a dry run shows the requests with it redacted."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

GITHUB_API = "https://api.github.com"


class GitHubError(ValueError):
    """GitHub cannot be reached or refused; one line saying what to do."""


def _gh_hosts_token(host: str) -> str:
    config = Path(os.environ.get("GH_CONFIG_DIR") or Path.home() / ".config" / "gh") / "hosts.yml"
    try:
        hosts = yaml.safe_load(config.read_text()) or {}
    except (OSError, yaml.YAMLError):
        return ""
    entry = hosts.get(host) if isinstance(hosts, dict) else None
    return str(entry.get("oauth_token", "")) if isinstance(entry, dict) else ""


def github_token(host: str = "github.com") -> str:
    """GITHUB_TOKEN, else GH_TOKEN, else the login `gh auth login` stored; empty when there is none."""
    for name in ("GITHUB_TOKEN", "GH_TOKEN"):
        if os.environ.get(name):
            return os.environ[name]
    token = _gh_hosts_token(host)
    if token or shutil.which("gh") is None:
        return token
    proc = subprocess.run(
        ["gh", "auth", "token", "--hostname", host], capture_output=True, text=True, timeout=15
    )
    return proc.stdout.strip() if proc.returncode == 0 else ""


def token_host(api_url: str | None = None) -> str:
    """The host a token is for: github.com for api.github.com, else the Enterprise API's host."""
    api = api_url or os.environ.get("GITHUB_API_URL") or GITHUB_API
    host = urllib.parse.urlsplit(api).hostname or "github.com"
    return "github.com" if host == "api.github.com" else host


def push_auth_env(url: str, api_url: str | None = None) -> dict[str, str]:
    """Environment for the one host `git push` to an http(s) fork URL on the token's host: the token as
    an `http.<origin>.extraHeader` passed through GIT_CONFIG_* (never in argv, a config file or the
    sandbox), redirects off so it goes nowhere else. Empty when the URL is not on that host or there
    is no token (git's own credential setup then applies)."""
    parts = urllib.parse.urlsplit(url)
    host = token_host(api_url)
    if parts.scheme not in ("http", "https") or parts.hostname != host:
        return {}
    token = github_token(host)
    if not token:
        return {}
    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    origin = f"{parts.scheme}://{parts.hostname}" + (f":{parts.port}" if parts.port else "") + "/"
    return {
        "GIT_CONFIG_COUNT": "2",
        "GIT_CONFIG_KEY_0": f"http.{origin}.extraHeader",
        "GIT_CONFIG_VALUE_0": f"Authorization: Basic {basic}",
        "GIT_CONFIG_KEY_1": "http.followRedirects",
        "GIT_CONFIG_VALUE_1": "false",
    }


def url_owner(url: str) -> str:
    """OWNER of an http(s) URL https://HOST/OWNER/NAME(.git); '' for anything else."""
    parts = urllib.parse.urlsplit(url)
    path = [p for p in parts.path.split("/") if p]
    return path[-2] if parts.scheme in ("http", "https") and len(path) >= 2 else ""


@dataclass
class PRRequest:
    """The GitHub REST calls that open the PR; `redacted()` is what logs and dry runs show."""

    url: str
    body: dict[str, Any]
    token: str
    labels: list[str] = field(default_factory=list)
    reviewers: list[str] = field(default_factory=list)

    def headers(self) -> dict[str, str]:
        return {
            "Accept": "application/vnd.github+json",
            "Authorization": f"Bearer {self.token}",
            "X-GitHub-Api-Version": "2022-11-28",
            "Content-Type": "application/json",
            "User-Agent": "rocport",
        }

    def followups(self, number: int | str) -> list[tuple[str, dict[str, Any]]]:
        """The calls after the PR exists: its labels (issues API) and its reviewers."""
        repo = self.url.rsplit("/pulls", 1)[0]
        calls = []
        if self.labels:
            calls.append((f"{repo}/issues/{number}/labels", {"labels": self.labels}))
        if self.reviewers:
            calls.append((f"{repo}/pulls/{number}/requested_reviewers", {"reviewers": self.reviewers}))
        return calls

    def redacted(self) -> str:
        headers = {**self.headers(), "Authorization": "Bearer ***"}
        lines = [f"POST {self.url}", json.dumps({"headers": headers, "json": self.body}, indent=2)]
        for url, body in self.followups("{number}"):
            lines += [f"POST {url}", json.dumps({"json": body}, indent=2)]
        return "\n".join(lines)


def post(req: PRRequest, url: str, body: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    """One authenticated POST; errors never echo the token."""
    if not url.startswith(
        ("https://", "http://")
    ):  # a file: or ftp: URL from --api-url must not get the token
        raise GitHubError(f"{url} is not an http(s) URL; check --api-url")
    http_req = urllib.request.Request(  # noqa: S310 (scheme checked above)
        url, data=json.dumps(body).encode(), headers=req.headers(), method="POST"
    )
    try:
        with urllib.request.urlopen(http_req, timeout=timeout_s) as resp:  # noqa: S310 (scheme checked above)
            answer: dict[str, Any] = json.loads(resp.read() or b"{}")  # GitHub answers a POST with an object
            return answer
    except urllib.error.HTTPError as exc:
        detail = exc.read()[:300].decode(errors="replace").replace(req.token, "***")
        raise GitHubError(f"GitHub answered HTTP {exc.code} for {url}: {detail}") from exc
    except urllib.error.URLError as exc:
        raise GitHubError(f"cannot reach {url}: {exc.reason}; check --api-url") from exc
