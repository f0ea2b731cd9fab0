"""tools.files.path_text and path_suffix stand in for pathlib on the scan's start (its
import is ~4 ms of a `rocport scan`): they must print and split paths exactly as pathlib does, or the
typer-free start and the typer command would name the same path differently."""

from __future__ import annotations

from pathlib import Path, PurePath

import pytest

from tools.files import path_suffix, path_text, stays_inside

AWKWARD = (
    "", ".", "..", "/", "//", "///", "////a", "//a/b/", "a", "a/", "a//b", "./a/./b//c/", "a/../b", "../a",
    "~/p.yaml", ".bashrc", "..a", "x.", "a.", "a.b/c", "dir/x.tar.gz", "a/b.yaml/", ".hidden/x", "vllm",
    "mine.yaml", "repo/csrc/k.cu", "a/.", "./", "/./a/../", "sp ace/é.cu",
)  # fmt: skip


@pytest.mark.parametrize("text", AWKWARD)
def test_path_text_prints_a_path_as_pathlib_does(text):
    assert path_text(text) == str(Path(text))
    assert path_text(Path(text)) == str(Path(text))


@pytest.mark.parametrize("text", AWKWARD)
def test_a_profile_name_has_a_suffix_where_pathlib_sees_one(text):
    assert path_suffix(text) == PurePath(text).suffix


@pytest.mark.parametrize(
    ("base", "target"), [("/a/b", "/a/b/c.cu"), ("/a/b", "/a/bc/k.cu"), ("/", "/x"), ("/a", "/a")]
)
def test_stays_inside_agrees_with_pathlib_on_what_is_under_a_base(base, target):
    import os

    assert stays_inside(os.path.relpath(target, base)) == PurePath(target).is_relative_to(base)
