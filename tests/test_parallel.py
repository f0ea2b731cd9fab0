"""The parallel schedule of `make test`: which test modules must stay on one worker."""

import os
import subprocess
import sys
from pathlib import Path

from tests.parallel import shares_fixtures, unit_of

ROOT = Path(__file__).resolve().parent.parent


def test_modules_with_a_module_scoped_fixture_stay_together_and_others_spread():
    assert shares_fixtures(ROOT / "tests/agent/tune/test_tune_e2e.py", ROOT)
    assert shares_fixtures(ROOT / "tests/agent/test_kill9_resume.py", ROOT)
    assert not shares_fixtures(ROOT / "tests/test_architecture.py", ROOT)
    tune = "tests/agent/tune/test_tune_e2e.py"
    assert unit_of(f"{tune}::test_a", ROOT) == unit_of(f"{tune}::test_b[x]", ROOT) == tune
    plain = "tests/test_architecture.py::test_layers"
    assert unit_of(plain, ROOT) == plain


def test_a_module_scoped_fixture_in_a_conftest_above_groups_the_module(tmp_path: Path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "test_x.py").write_text("def test_x(server):\n    pass\n")
    (tmp_path / "pkg" / "conftest.py").write_text(
        "import pytest\n\n@pytest.fixture(scope='module')\ndef server():\n    return 1\n"
    )
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "test_y.py").write_text("import pytest\n\n@pytest.fixture\ndef f():\n    pass\n")
    assert shares_fixtures(tmp_path / "pkg" / "test_x.py", tmp_path)
    assert not shares_fixtures(tmp_path / "other" / "test_y.py", tmp_path)


def test_the_serial_pass_imports_only_modules_that_mark_tests_serial(tmp_path: Path):
    """`-m serial` skips importing a module that never says `serial` (tests/conftest.py); any other
    selection imports it (here it cannot be imported: it fails the run)."""
    (tmp_path / "conftest.py").write_text("from tests.conftest import pytest_ignore_collect  # noqa: F401\n")
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    serial: alone\n")
    (tmp_path / "test_alone.py").write_text(
        "import pytest\n\n@pytest.mark.serial\ndef test_alone():\n    pass\n\ndef test_other():\n    pass\n"
    )
    (tmp_path / "test_broken.py").write_text("raise ImportError('imported')\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}

    def pytest(*args: str) -> subprocess.CompletedProcess:
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]
        return subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, check=False)

    serial = pytest("-m", "serial")
    assert serial.returncode == 0 and "1 passed, 1 deselected" in serial.stdout, serial.stdout
    other = pytest("-m", "serial or not serial")
    assert other.returncode != 0 and "imported" in other.stdout, other.stdout
