"""Shared fixtures. Real parts only: a missing daemon or compiler skips here, fails in CI (CI=true)."""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
REPO_ROOT = Path(__file__).resolve().parent.parent
ROCM_IMAGE = os.environ.get("ROCPORT_TEST_IMAGE", "rocport/rocm-build:6.4")


def require(condition: bool, what: str) -> None:
    """Skip the test when a real part is missing, except in CI where it is a failure."""
    if condition:
        return
    if IN_CI:
        pytest.fail(f"{what} is required in CI (CI=true) but missing", pytrace=False)
    pytest.skip(f"{what} not available")


def _docker_ok() -> bool:
    if not shutil.which("docker"):
        return False
    return subprocess.run(["docker", "info"], capture_output=True, timeout=30, check=False).returncode == 0


def _image_ok(image: str) -> bool:
    return (
        subprocess.run(
            ["docker", "image", "inspect", image], capture_output=True, timeout=30, check=False
        ).returncode
        == 0
    )


@pytest.fixture(scope="session")
def docker_daemon() -> None:
    require(_docker_ok(), "a running Docker daemon")


@pytest.fixture(scope="session")
def rocm_image(docker_daemon) -> str:
    """The local ROCm build image (built by `rocport image build`)."""
    require(_image_ok(ROCM_IMAGE), f"the local ROCm build image {ROCM_IMAGE} (run `rocport image build`)")
    return ROCM_IMAGE


@pytest.fixture(scope="session")
def hipcc() -> str:
    """A host hipcc on the AMD platform (ROCm 5.2 from Debian here: gfx90a/gfx908 only)."""
    path = shutil.which("hipcc")
    require(path is not None, "hipcc")
    os.environ.setdefault("HIP_PLATFORM", "amd")
    return path


@pytest.fixture(scope="session")
def nvcc() -> str:
    path = shutil.which("nvcc")
    require(path is not None, "nvcc")
    return path


@pytest.fixture
def git_repo(tmp_path: Path):
    """A factory for real git repos: git_repo({"path": "text"}) -> Path, one commit on main."""

    def make(files: dict[str, str], name: str = "repo") -> Path:
        root = tmp_path / name
        root.mkdir()
        for rel, text in files.items():
            p = root / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
        env = {
            **os.environ,
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@example.com",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@example.com",
        }
        for cmd in (
            ["git", "init", "-q", "-b", "main"],
            ["git", "add", "-A"],
            ["git", "commit", "-q", "-m", "initial"],
        ):
            subprocess.run(cmd, cwd=root, check=True, env=env)
        return root

    return make


def _shares_a_module_fixture(item: pytest.Item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    return info is not None and any(
        fixturedef.scope != "function" and fixturedef.scope != "session"
        for fixturedefs in info.name2fixturedefs.values()
        for fixturedef in fixturedefs
    )


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """`-m serial` alone (make test's second pass, a handful of tests): a test module whose text never
    says `serial` holds no test marked so, and is not imported. Importing every module only to deselect
    it took ~3.5 s, a quarter of that pass."""
    if config.getoption("markexpr", "") != "serial" or collection_path.suffix != ".py":
        return None
    if not collection_path.name.startswith("test_"):
        return None
    return "serial" not in collection_path.read_text(encoding="utf-8", errors="replace") or None


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Slow tests first, the slow modules built around one shared run first of all (a stable sort: the
    rest keep their order), so in a parallel run no long test is left running alone at the end."""
    items.sort(key=lambda item: (item.get_closest_marker("slow") is None, not _shares_a_module_fixture(item)))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """`--dist loadgroup`: a module whose tests share a module-scoped fixture runs on one worker (see
    tests/parallel.py); everything else test by test, in collection order."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from tests.parallel import ModuleFixtureScheduling

    config.option.loadscopereorder = False
    return ModuleFixtureScheduling(config, log)


# The terminal size the person running the tests set, if any. Importing readline (pytest does) makes GNU
# readline export COLUMNS=80 LINES=24 into the C environment without os.environ seeing it, so every
# process started from there inherits them: an xdist worker then has them in os.environ, and every CLI
# a test runs folds ids and paths at 80 columns where a serial run printed them whole.
TERMINAL_SIZE = ("COLUMNS", "LINES")
_SHARED = pytest.StashKey[str]()


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    """xdist controller: hand each worker the terminal size variables as the run started with them."""
    node.workerinput["terminal_size"] = {name: os.environ.get(name) for name in TERMINAL_SIZE}


def pytest_configure(config: pytest.Config) -> None:
    """Put the terminal size variables back as the run started with them (the controller's, in an xdist
    worker), in os.environ and in the C environment that subprocesses inherit. Runs started outside a
    test (module fixtures) share a compile cache and a rocport home of this process's own, never the
    machine's: no test writes runs into the user's ~/.rocport, nor caches into ~/.cache/rocport."""
    config.stash[_SHARED] = tempfile.mkdtemp(prefix="rocport-test-")
    os.environ["ROCPORT_SHARED_COMPILE_CACHE"] = os.path.join(config.stash[_SHARED], "compile-cache")
    os.mkdir(os.environ["ROCPORT_SHARED_COMPILE_CACHE"])
    os.environ["ROCPORT_HOME"] = os.path.join(config.stash[_SHARED], "home")
    os.environ["ROCPORT_CACHE_DIR"] = os.path.join(config.stash[_SHARED], "cache")
    # This process's compiled-pattern memo is written at exit (tools/regex_memo.py), after
    # pytest_unconfigure removed the directory: registered first, this removal runs after it.
    atexit.register(shutil.rmtree, config.stash[_SHARED], ignore_errors=True)
    started = getattr(config, "workerinput", {}).get("terminal_size")
    for name, value in (started or {name: os.environ.get(name) for name in TERMINAL_SIZE}).items():
        if value is None:
            os.environ.pop(name, None)
            os.unsetenv(name)  # pop alone leaves readline's value in the C environment
        else:
            os.environ[name] = value


def pytest_unconfigure(config: pytest.Config) -> None:
    if _SHARED in config.stash:
        shutil.rmtree(config.stash[_SHARED], ignore_errors=True)


@pytest.fixture(autouse=True)
def _own_compile_cache_and_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A test's runs share compiles only among themselves (agent.loop.compilers.shared_cache_dir): what
    another test compiled never answers them, so their counts do not depend on the order tests ran in.
    Its runs go to a rocport home of its own (a test may set another), so `rocport runs` in one test
    never lists another's and none lands in the user's ~/.rocport; its caches (scan results, parse memos,
    compiled patterns) are its own too."""
    own = tmp_path_factory.mktemp("rocport")
    (own / "compile-cache").mkdir()
    monkeypatch.setenv("ROCPORT_SHARED_COMPILE_CACHE", str(own / "compile-cache"))
    monkeypatch.setenv("ROCPORT_HOME", str(own / "home"))
    monkeypatch.setenv("ROCPORT_CACHE_DIR", str(own / "cache"))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: two workers more than cores. Much of the suite waits on other processes (servers
    starting, containers, kill-and-resume runs), and two slow tests hold a worker while mostly waiting
    (the tuned run's modelled launches, ~290 s; the Ray-cluster sweep, ~50 s): with one extra worker a
    core idled through them (2 cores: 87% busy, parallel pass 522 s), with two 97% (486-509 s)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return cores + 2
