"""The suite keeps to itself: runs that tests (and module fixtures) start land in a rocport home of the
test's own under the temporary directory, never in the ~/.rocport of the person running the tests."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from agent.loop.rundir import rocport_home
from tools.files import user_cache_dir
from tools.scan.cache import default_cache_dir


@pytest.fixture(scope="module")
def home_of_a_module_fixture() -> Path:
    return rocport_home()


def test_a_tests_runs_go_to_a_home_of_its_own(tmp_path_factory: pytest.TempPathFactory) -> None:
    home = rocport_home()
    assert home.is_relative_to(tmp_path_factory.getbasetemp()), home
    assert not home.is_relative_to(Path.home() / ".rocport")


def test_a_module_fixtures_runs_go_to_a_temporary_home(home_of_a_module_fixture: Path) -> None:
    assert home_of_a_module_fixture.is_relative_to(Path(tempfile.gettempdir()).resolve()), (
        home_of_a_module_fixture
    )
    assert home_of_a_module_fixture != rocport_home()  # each test still has its own


def test_a_tests_rocport_processes_keep_their_caches_to_the_test(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Scan results, parse memos and compiled patterns that the rocport processes a test starts write."""
    cache = Path(user_cache_dir())
    assert cache.is_relative_to(tmp_path_factory.getbasetemp()), cache
    assert Path(default_cache_dir()).parent == cache


def test_the_test_process_keeps_its_compiled_pattern_memo_out_of_the_users_cache(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """The memo's place is fixed when tools/regex_memo.py is imported, at collection, before any test."""
    from tools import regex_memo

    assert regex_memo._PATH is not None
    assert Path(regex_memo._PATH).is_relative_to(Path(tempfile.gettempdir()).resolve()), regex_memo._PATH
    assert not Path(regex_memo._PATH).is_relative_to(Path.home() / ".cache")
