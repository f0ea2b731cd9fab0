"""The layers, read from the imports: what each part of rocport may use.

sandboxes -> nothing of ours; tools -> sandboxes; the agent library -> tools, sandboxes (never its own
CLI, never evals); only agent/cli is the face and may use anything; evals use tools, sandboxes and the
agent's public modules below. An import inside a function counts the same as one at the top.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
OURS = ("agent", "tools", "sandboxes", "evals")

# What evals (and sweeps, through the same names) may use of the agent: the job, the port, its run
# directory, profiles and the model boundary. Everything else of agent/ is internal.
AGENT_PUBLIC = ("agent.config", "agent.port", "agent.rundir", "agent.profiles", "agent.llm", "agent.version",
                "agent.tune")

# Crossings that exist today, each to be removed by moving code to its layer (issue #13). The list may
# only shrink: a new crossing fails the first test, a fixed one fails the second until it is deleted here.
KNOWN_CROSSINGS = {
    # scan loads a framework profile by name; the profile should be passed in as data by its caller
    ("tools/scan/__init__.py", "agent.profiles"),
    ("tools/scan/rocm_build.py", "agent.profiles"),
    # the report and PR renderers call the tune section builders; those belong in tools/ beside them
    ("tools/pr_text.py", "agent.tune.sections"),
    ("tools/report.py", "agent.tune.sections"),
    ("tools/report_html.py", "agent.tune.sections"),
    # the sweep's fixture matrix reuses the eval tasks' checkpoint builder; it belongs in tools/weights
    ("agent/sweep/fixture.py", "evals.taskdefs"),
    # eval scorers reuse internal rule helpers (clang-format of touched lines, the unit compile proof,
    # the weight-name writer); these should be exported through a public agent API
    ("evals/bench_weights_real.py", "agent.rules.weight_names"),
    ("evals/real_kernels/score.py", "agent.rules.style"),
    ("evals/real_kernels/score.py", "agent.validate"),
}


def _layer(path: Path) -> str:
    parts = path.relative_to(ROOT).parts
    if parts[:2] == ("agent", "cli"):
        return "cli"
    return parts[0]


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, dotted module) for each import of one of our packages in `path`."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        found += [(node.lineno, name) for name in names if name.split(".")[0] in OURS]
    return found


def _allowed(layer: str, module: str) -> bool:
    top = module.split(".")[0]
    if layer == "sandboxes":
        return top == "sandboxes"
    if layer == "tools":
        return top in ("tools", "sandboxes")
    if layer == "agent":
        return top in ("tools", "sandboxes") or (top == "agent" and not module.startswith("agent.cli"))
    if layer == "evals":
        return top in ("tools", "sandboxes", "evals") or module == "agent" or module.startswith(AGENT_PUBLIC)
    return True  # the CLI is the face: it wires everything together


def _crossings(paths) -> dict[tuple[str, str], int]:
    """(file, module) -> first line, for each import that crosses a layer."""
    out: dict[tuple[str, str], int] = {}
    for path in paths:
        layer = _layer(path)
        for line, module in _imports(path):
            if not _allowed(layer, module):
                out.setdefault((str(path.relative_to(ROOT)), module), line)
    return out


def _sources() -> list[Path]:
    return sorted(p for top in OURS for p in (ROOT / top).rglob("*.py")
                  if "frameworks" not in p.relative_to(ROOT).parts)  # fixture frameworks are "someone else's" code


def test_every_import_respects_the_layers():
    new = {k: line for k, line in _crossings(_sources()).items() if k not in KNOWN_CROSSINGS}
    assert [f"{file}:{line}: imports {module}" for (file, module), line in sorted(new.items())] == []


def test_the_known_crossings_are_still_there():
    """A crossing that was fixed leaves the list, so the list only shrinks."""
    assert sorted(KNOWN_CROSSINGS - set(_crossings(_sources()))) == []


@pytest.mark.parametrize(("where", "source", "allowed"), [
    ("sandboxes/x.py", "from tools.git import commit\n", False),
    ("tools/x.py", "def f():\n    from agent.profiles import load_profile\n", False),
    ("tools/x.py", "from sandboxes import LocalSandbox\n", True),
    ("agent/x.py", "from agent.cli.app import app\n", False),
    ("agent/x.py", "import evals.runner\n", False),
    ("agent/cli/x.py", "import evals.runner\n", True),
    ("evals/x.py", "from agent.nodes.build import build\n", False),
    ("evals/x.py", "from agent.port import start_port\n", True),
])
def test_the_checker_catches_a_crossing(tmp_path, where, source, allowed):
    """The rule reader itself: a crossing import, even inside a function, is reported with its line."""
    path = ROOT / where
    fake = tmp_path / "x.py"
    fake.write_text(source)
    layer = _layer(path)
    verdicts = [_allowed(layer, module) for _, module in _imports(fake)]
    assert verdicts == [allowed]
