"""agent/patch/preprocessed.py: a CUDA -E token stream is reused only while what it read reads the same."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from agent.patch.preprocessed import PreprocessedMemo
from tests.conftest import require

CMD = "cc -E -Iinc a.c"


def _preprocess(root: Path) -> bytes:
    return subprocess.run(CMD.split(), cwd=root, capture_output=True, check=True).stdout


def _repo(tmp_path: Path, header: str, unit: str) -> Path:
    require(shutil.which("cc") is not None, "a C compiler (cc)")
    root = tmp_path / "repo"
    (root / "inc").mkdir(parents=True)
    (root / "inc" / "common.h").write_text(header)
    (root / "a.c").write_text(unit)
    return root


def test_a_stream_is_reused_until_a_file_it_read_changes_and_again_once_reverted(tmp_path: Path):
    root = _repo(
        tmp_path, "#define SCALE 2\n", '#include "common.h"\nint twice(int x) { return SCALE * x; }\n'
    )
    memo = PreprocessedMemo()
    before = ["int", "twice", "(", "...", "2"]
    memo.put(root, CMD, _preprocess(root), before)
    assert memo.get(root, CMD) is before  # the next proposal's "before": nothing changed since
    assert memo.get(root, "cc -E -DX -Iinc a.c") is None  # other flags: another stream

    (root / "inc" / "common.h").write_text("#define SCALE 3\n")  # a patch to a header the unit reads
    assert memo.get(root, CMD) is None
    after = ["int", "twice", "(", "...", "3"]
    memo.put(root, CMD, _preprocess(root), after)
    assert memo.get(root, CMD) is after

    (root / "inc" / "common.h").write_text("#define SCALE 2\n")  # the patch reverted: the old tree again
    assert memo.get(root, CMD) is before
    assert memo.hits == 3


def test_the_memo_keeps_a_bounded_number_of_streams(tmp_path: Path):
    root = _repo(tmp_path, "#define SCALE 0\n", '#include "common.h"\nint s = SCALE;\n')
    memo = PreprocessedMemo(entries=2)
    for scale in range(3):
        (root / "inc" / "common.h").write_text(f"#define SCALE {scale}\n")
        memo.put(root, CMD, _preprocess(root), [str(scale)])
    assert memo.get(root, CMD) == ["2"]
    (root / "inc" / "common.h").write_text("#define SCALE 0\n")
    assert memo.get(root, CMD) is None  # the oldest stream was dropped
