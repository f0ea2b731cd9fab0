"""The corpus: logs in the real formats of each tool, each with the failures it must yield.

Each `corpus/<name>.log` has a `<name>.expected.json`: the repo files that exist (so container
and build-dir paths map back to the repo) and the expected failures in log order; only the
fields given are compared, `facts` as a subset.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tools.diagnose import diagnose_file
from tools.records import KINDS

CORPUS = Path(__file__).parent / "corpus"
LOGS = sorted(CORPUS.glob("*.log"))


def _make_repo(root: Path, files: list[str]) -> Path:
    for rel in files:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("// fixture\n")
    return root


@pytest.mark.parametrize("log", LOGS, ids=[p.stem for p in LOGS])
def test_corpus_log_yields_expected_failures(log: Path, tmp_path: Path):
    expected = json.loads(log.with_suffix(".expected.json").read_text())
    repo = _make_repo(tmp_path / "repo", expected.get("repo_files", []))
    got = diagnose_file(log, repo_root=repo, source=expected.get("source"))
    summary = [(f.kind, f.file, f.line, f.symbol) for f in got]
    assert len(got) == len(expected["failures"]), summary
    for failure, want in zip(got, expected["failures"], strict=True):
        for key, value in want.items():
            if key == "facts":
                for fact, fact_value in value.items():
                    assert failure.facts.get(fact) == fact_value, (fact, failure)
            else:
                assert getattr(failure, key) == value, (key, failure)
        assert failure.kind in KINDS
        assert failure.excerpt and len(failure.excerpt.splitlines()) <= 30
        assert failure.signature.startswith(failure.kind + ":")


def test_every_failure_class_has_a_corpus_log():
    """Done-when of the issue: each FAILURE_CLASSES.md kind is diagnosed from some real-format log
    (this corpus, or the real-world one under real/ for the kinds those logs added)."""
    covered = set()
    for log in LOGS:
        covered |= {f["kind"] for f in json.loads(log.with_suffix(".expected.json").read_text())["failures"]}
    for expected in (Path(__file__).parent / "real").glob("*/*.expected.json"):
        covered.add(json.loads(expected.read_text())["expected"]["kind"])
    taxonomy = set(KINDS) - {"compile_error", "link_error", "python_error"}
    assert taxonomy - covered == set()
