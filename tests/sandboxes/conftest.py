"""The compile-service tests' shared repo (two C units over one header) and a service on it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sandboxes.compile_service import CompileService
from sandboxes.local import LocalSandbox
from tests.conftest import require

UNIT = '#include "common.h"\nint twice(int x) { return SCALE * x; }\n'
HEADER = "#define SCALE 2\n"
CC = "cc -O2 -Iinc -c {src} -o {out}"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "inc").mkdir(parents=True)
    (root / "inc" / "common.h").write_text(HEADER)
    (root / "a.c").write_text(UNIT)
    (root / "b.c").write_text(UNIT.replace("twice", "thrice"))
    return root


@pytest.fixture
def service(repo: Path):
    require(shutil.which("cc") is not None, "a C compiler (cc)")
    box = LocalSandbox(repo)
    svc = CompileService.start(box)
    yield svc
    svc.close()
    box.close()
