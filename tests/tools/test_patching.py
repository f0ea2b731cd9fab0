"""tools/patching.py: diffs apply whole or not at all, and never outside the repo."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from agent.proposers.rules.base import file_diff
from tools.patching import PatchError, apply_diff, can_apply, diff_paths, preview, revert_diff


def _status(root) -> str:
    return subprocess.run(
        ["git", "status", "--porcelain"], check=False, cwd=root, capture_output=True, text=True
    ).stdout


def test_apply_then_revert_restores_the_tree(git_repo):
    root = git_repo({"csrc/k.cu": "int a;\nint b;\n"})
    diff = file_diff("csrc/k.cu", "int a;\nint b;\n", "int a;\nint c;\n") + file_diff(
        "csrc/new.h", None, "x\n"
    )
    assert apply_diff(root, diff) == ["csrc/k.cu", "csrc/new.h"]
    assert (root / "csrc/k.cu").read_text() == "int a;\nint c;\n"
    assert (root / "csrc/new.h").read_text() == "x\n"
    revert_diff(root, diff)
    assert _status(root) == ""


def test_file_without_final_newline_round_trips(git_repo):
    root = git_repo({"a.h": "one\ntwo"})
    diff = file_diff("a.h", "one\ntwo", "zero\none\ntwo")
    apply_diff(root, diff)
    assert (root / "a.h").read_text() == "zero\none\ntwo"


def test_stale_diff_changes_nothing(git_repo):
    root = git_repo({"a.h": "one\n", "b.h": "two\n"})
    diff = file_diff("a.h", "one\n", "1\n") + file_diff("b.h", "not what is there\n", "2\n")
    with pytest.raises(PatchError, match="does not apply"):
        apply_diff(root, diff)
    assert _status(root) == ""


@pytest.mark.parametrize("path", ["../outside.txt", "/etc/passwd", "a/../../x", ".git/config"])
def test_escaping_paths_are_refused(git_repo, tmp_path, path):
    root = git_repo({"a.h": "one\n"})
    diff = f"--- a/{path}\n+++ b/{path}\n@@ -0,0 +1 @@\n+pwned\n".replace("a//", "/").replace("b//", "/")
    with pytest.raises(PatchError, match="refused patch") as err:
        apply_diff(root, diff)
    assert "\n" not in str(err.value)
    assert not (tmp_path / "outside.txt").exists()
    assert not can_apply(root, diff)
    assert preview(root, diff, [path]) == {}  # the dry run refuses it too, and writes nothing


def test_preview_never_copies_or_patches_a_file_outside_the_repo(git_repo, tmp_path):
    """The preview applies a diff in a scratch folder; a `../` path there would read a file beside the
    repo and write its patched copy beside the scratch folder (the system temp dir)."""
    import tempfile
    import uuid

    name = f"rocport-preview-probe-{uuid.uuid4().hex[:8]}.txt"
    root = git_repo({"a.h": "one\n"})
    (tmp_path / name).write_text("secret\n")
    diff = f"--- a/../{name}\n+++ b/../{name}\n@@ -1 +1 @@\n-secret\n+pwned\n"
    assert preview(root, diff, [f"../{name}"]) == {}
    assert not (Path(tempfile.gettempdir()) / name).exists()
    assert (tmp_path / name).read_text() == "secret\n"


def test_symlink_escape_is_refused(git_repo, tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    root = git_repo({"a.h": "one\n"})
    os.symlink(outside, root / "link")
    diff = file_diff("link/evil.h", None, "pwned\n")
    with pytest.raises(PatchError, match="outside the repo"):
        apply_diff(root, diff)
    assert preview(root, diff, ["link/evil.h"]) == {}
    assert list(outside.iterdir()) == []


def test_diff_paths_reads_git_and_plain_headers():
    diff = "diff --git a/x.cu b/x.cu\n--- a/x.cu\n+++ b/x.cu\n@@ -1 +1 @@\n-a\n+b\n"
    diff += "--- /dev/null\n+++ b/new.h\n@@ -0,0 +1 @@\n+c\n"
    assert diff_paths(diff) == ["x.cu", "new.h"]
