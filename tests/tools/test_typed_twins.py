"""The named tuples a `rocport scan` process builds are `collections.namedtuple` at run time, each with
a typed `NamedTuple` twin under `if TYPE_CHECKING:` for mypy (tools/__init__.py says why). The two
must declare the same fields and defaults, or mypy would check code against fields that do not exist."""

from __future__ import annotations

import ast
import importlib
import inspect

import pytest

TWINS = (
    ("tools.cpp.build_configs", "_MacroFields"),
    ("tools.cpp.preprocessor", "_IncludeFields"),
    ("agent.cli.scan_options", "_ScanOptionFields"),
    ("agent.profile_shape", "_ScanViewFields"),
)


def _typed_twin(module_name: str, name: str) -> tuple[tuple[str, ...], dict[str, object]]:
    tree = ast.parse(inspect.getsource(importlib.import_module(module_name)))
    for block in ast.walk(tree):
        if (
            isinstance(block, ast.If)
            and isinstance(block.test, ast.Name)
            and block.test.id == "TYPE_CHECKING"
        ):
            for node in block.body:
                if isinstance(node, ast.ClassDef) and node.name == name:
                    fields = [n for n in node.body if isinstance(n, ast.AnnAssign)]
                    names = tuple(n.target.id for n in fields if isinstance(n.target, ast.Name))
                    defaults = {
                        n.target.id: ast.literal_eval(n.value)
                        for n in fields
                        if n.value is not None and isinstance(n.target, ast.Name)
                    }
                    return names, defaults
    raise AssertionError(f"{module_name} has no typed twin {name} under `if TYPE_CHECKING:`")


@pytest.mark.parametrize(("module_name", "name"), TWINS)
def test_the_run_time_named_tuple_has_its_typed_twins_fields_and_defaults(module_name, name):
    runtime = getattr(importlib.import_module(module_name), name)
    assert (runtime._fields, runtime._field_defaults) == _typed_twin(module_name, name)


def test_the_twin_reader_sees_a_field_the_run_time_tuple_lacks(tmp_path, monkeypatch):
    (tmp_path / "twin_probe.py").write_text(
        "from collections import namedtuple\n"
        "TYPE_CHECKING = False\n"
        "if TYPE_CHECKING:\n"
        "    from typing import NamedTuple\n\n"
        "    class _F(NamedTuple):\n"
        "        a: int\n"
        "        b: int = 2\n"
        "else:\n"
        "    _F = namedtuple('_F', ('a',))\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    runtime = importlib.import_module("twin_probe")._F
    assert (runtime._fields, runtime._field_defaults) != _typed_twin("twin_probe", "_F")
