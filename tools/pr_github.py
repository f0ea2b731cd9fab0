"""GitHub for `rocport pr --open`: the token (GITHUB_TOKEN, GH_TOKEN or the GitHub CLI's stored login)
and the REST calls that open a draft PR, then label it and request reviewers. Nothing here prints or
stores the token; a dry run shows the requests with it redacted."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

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
    proc = subprocess.run(["gh", "auth", "token", "--hostname", host], capture_output=True, text=True, timeout=15)
    return proc.stdout.strip() if proc.returncode == 0 else ""


@dataclass
class PRRequest:
    """The GitHub REST calls that open the PR; `redacted()` is what logs and dry runs show."""

    url: str
    body: dict
    token: str
    labels: list[str] = field(default_factory=list)
    reviewers: list[str] = field(default_factory=list)

    def headers(self) -> dict[str, str]:
        return {"Accept": "application/vnd.github+json", "Authorization": f"Bearer {self.token}",
                "X-GitHub-Api-Version": "2022-11-28", "Content-Type": "application/json",
                "User-Agent": "rocport"}

    def followups(self, number: int | str) -> list[tuple[str, dict]]:
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


def post(req: PRRequest, url: str, body: dict, timeout_s: float) -> dict:
    """One authenticated POST; errors never echo the token."""
    http_req = urllib.request.Request(url, data=json.dumps(body).encode(), headers=req.headers(), method="POST")
    try:
        with urllib.request.urlopen(http_req, timeout=timeout_s) as resp:
            return json.loads(resp.read() or b"{}")
    except urllib.error.HTTPError as exc:
        detail = exc.read()[:300].decode(errors="replace").replace(req.token, "***")
        raise GitHubError(f"GitHub answered HTTP {exc.code} for {url}: {detail}") from exc
    except urllib.error.URLError as exc:
        raise GitHubError(f"cannot reach {url}: {exc.reason}; check --api-url") from exc
