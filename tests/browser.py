"""Headless Chromium for page tests: render a local HTML file, return the DOM and console errors."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.conftest import require

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--enable-logging=stderr",
    "--v=0",
]


def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    require(path is not None, "headless Chromium (apt-get install chromium)")
    return path


def render(page: Path, tmp: Path) -> tuple[str, list[str], Path]:
    """Load `page` in headless Chromium; returns (rendered DOM, console error lines, screenshot PNG)."""
    exe = chromium()
    profile = tmp / "chromium-profile"
    shot = tmp / "page.png"
    dom = subprocess.run(
        [exe, *FLAGS, f"--user-data-dir={profile}", "--dump-dom", page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    subprocess.run(
        [
            exe,
            *FLAGS,
            f"--user-data-dir={profile}",
            f"--screenshot={shot}",
            "--window-size=1280,900",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    errors = [ln for ln in dom.stderr.splitlines() if "CONSOLE" in ln and ("ERROR" in ln or "Uncaught" in ln)]
    return dom.stdout, errors, shot
