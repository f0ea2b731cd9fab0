"""Which files a tree scan reads: symlinks are classified from the directory listing."""

from __future__ import annotations

from tests.tools.scan.helpers import write
from tools.scan.discover import discover


def test_a_symlinked_directory_is_not_walked_and_an_in_tree_file_link_is_scanned(tmp_path):
    outside = write(tmp_path / "outside", {"secret.cu": "#include <cuda.h>\n"})
    root = write(tmp_path / "repo", {"real/k.cu": "#include <cuda.h>\n", "tests/t.cu": "", "notes.txt": ""})
    (root / "alias").symlink_to(root / "real", target_is_directory=True)
    (root / "away").symlink_to(outside, target_is_directory=True)
    (root / "k2.cu").symlink_to(root / "real" / "k.cu")
    (root / "leak.cu").symlink_to(outside / "secret.cu")
    assert discover(root) == (["k2.cu", "real/k.cu", "tests/t.cu"], [])
    assert discover(root, exclude=("tests",)) == (["k2.cu", "real/k.cu"], [])
