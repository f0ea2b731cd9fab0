"""How `make test` spreads the suite over pytest-xdist workers (`-n auto --dist loadgroup`).

Each test is its own unit of work, except that all tests of a module that share a module-scoped fixture
(one `rocport port` run, one tuned run, one built server, read by several tests) go to one worker: the
fixture is then built once, not once on every worker that happens to get one of its tests.

xdist's own loadgroup cannot do this with pytest 9: it appends the group to `Item._nodeid`, which pytest 9
no longer reads, so every test ends up alone. And the controller that schedules never collects, so it
cannot ask the fixtures either: it reads the test files (and the conftest.py files above them) instead.
Units start in collection order, which the conftest makes slow tests first."""

from __future__ import annotations

import ast
from collections import OrderedDict
from functools import cache
from pathlib import Path

from xdist.scheduler import LoadScopeScheduling

SHARED_SCOPES = {"module", "class", "package"}


def _scope_of(decorator: ast.expr) -> str | None:
    """'module' for @pytest.fixture(scope="module") (or @fixture(...)); None for anything else."""
    if not isinstance(decorator, ast.Call):
        return None
    func = decorator.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if name != "fixture":
        return None
    for keyword in decorator.keywords:
        if keyword.arg == "scope" and isinstance(keyword.value, ast.Constant):
            return str(keyword.value.value)
    return None


@cache
def defines_shared_fixture(path: Path) -> bool:
    """Whether the Python file defines a fixture that lives longer than one test."""
    try:
        tree = ast.parse(path.read_text(), str(path))
    except (OSError, SyntaxError):
        return False
    return any(
        _scope_of(decorator) in SHARED_SCOPES
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        for decorator in node.decorator_list
    )


def shares_fixtures(test_file: Path, root: Path) -> bool:
    """The test file, or a conftest.py between it and root, defines a module/class/package fixture."""
    if defines_shared_fixture(test_file):
        return True
    folder = test_file.parent
    while folder == root or root in folder.parents:
        if defines_shared_fixture(folder / "conftest.py"):
            return True
        folder = folder.parent
    return False


def unit_of(nodeid: str, root: Path) -> str:
    """The unit of work a test belongs to: its module where the module shares a fixture, else itself."""
    module = nodeid.split("::", 1)[0]
    return module if shares_fixtures(root / module, root) else nodeid


class ModuleFixtureScheduling(LoadScopeScheduling):
    """One test per unit, a whole module per unit where its tests share a fixture; collection order."""

    def __init__(self, config, log=None) -> None:
        super().__init__(config, log)
        self.rootpath = Path(config.rootpath)
        self.workqueue = OrderedDict()

    def _split_scope(self, nodeid: str) -> str:
        return unit_of(nodeid, self.rootpath)
