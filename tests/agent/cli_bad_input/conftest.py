"""The temp ROCPORT_HOME every bad-input test runs `rocport` in."""

from __future__ import annotations

from pathlib import Path

import pytest

# the shared checks in cli.py assert what each test states: show their operands on failure as pytest does
pytest.register_assert_rewrite("tests.agent.cli_bad_input.cli")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path
