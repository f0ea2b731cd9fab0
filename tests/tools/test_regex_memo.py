"""Compiled patterns kept between processes (tools/regex_memo.py): the next process builds each
pattern from the kept program instead of running `re`'s compiler, and whatever the memo holds
(nothing, garbage, a program this interpreter refuses, a pile of old patterns) every pattern is the
one `re.compile` makes."""

from __future__ import annotations

import marshal
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

PROBE = r"""
import re, sys
from tools.regex_memo import compile_pattern
patterns = [(r"(?P<name>[A-Za-z_]\w*)\s*\(", 0), (rb"#[ \t]*include", 0), (r"^\s*#\s*if(?P<neg>n?)def", re.M)]
for text, flags in patterns:
    got = compile_pattern(text, flags)
    from_memo = (type(text), text, flags) not in re._cache  # re.compile files what it compiles there
    assert got == re.compile(text, flags) and got.groupindex == re.compile(text, flags).groupindex
    print("memo" if from_memo else "compiled")
assert compile_pattern(patterns[0][0]).match("launch (x)").group("name") == "launch"
"""


def _probe(cache: Path) -> list[str]:
    env = {**os.environ, "ROCPORT_CACHE_DIR": str(cache), "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, cwd=REPO, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


def _memo_file(cache: Path) -> Path:
    (found,) = (cache / "regex").iterdir()
    return found


def test_the_next_process_builds_its_patterns_from_the_memo(tmp_path: Path) -> None:
    assert _probe(tmp_path) == ["compiled"] * 3
    assert _probe(tmp_path) == ["memo"] * 3
    assert oct(os.stat(tmp_path / "regex").st_mode & 0o777) == "0o700"  # the user's own cache


def test_a_corrupt_memo_costs_a_compile_and_is_written_again(tmp_path: Path) -> None:
    _probe(tmp_path)
    _memo_file(tmp_path).write_bytes(b"\x00not marshal")
    assert _probe(tmp_path) == ["compiled"] * 3
    assert _probe(tmp_path) == ["memo"] * 3


def test_a_program_the_interpreter_refuses_falls_back_to_re(tmp_path: Path) -> None:
    _probe(tmp_path)
    memo = _memo_file(tmp_path)
    kept = marshal.loads(memo.read_bytes())  # noqa: S302 (the memo this test made)
    (key,) = [k for k in kept if k[0] == r"(?P<name>[A-Za-z_]\w*)\s*\("]
    flags, _, groups, index, names = kept[key]
    kept[key] = (flags, [999, 1, 2], groups, index, names)  # not an SRE program
    memo.write_bytes(marshal.dumps(kept))
    assert _probe(tmp_path) == ["compiled", "memo", "memo"]


def test_a_memo_grown_past_its_bound_starts_again(tmp_path: Path) -> None:
    _probe(tmp_path)
    memo = _memo_file(tmp_path)
    stale = {("x" * 2_000_000, 0): (32, [], 0, {}, ())}  # an old version's pattern, kept no more
    memo.write_bytes(marshal.dumps(stale))
    assert _probe(tmp_path) == ["compiled"] * 3
    assert memo.stat().st_size < 100_000
    assert len(marshal.loads(memo.read_bytes())) == 3  # noqa: S302 (the memo this test made)


def test_where_the_memo_cannot_be_written_patterns_are_compiled_once_by_re(tmp_path: Path) -> None:
    """No program is worked out (a second compile of every pattern) for a memo that can never be kept."""
    (tmp_path / "file").write_text("")
    cache = tmp_path / "file" / "cache"  # below a plain file: no directory can be made there
    probe = PROBE + "\nimport tools.regex_memo as m\nassert not m._used, m._used\n"
    env = {**os.environ, "ROCPORT_CACHE_DIR": str(cache), "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "-c", probe], env=env, cwd=REPO, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["compiled"] * 3
