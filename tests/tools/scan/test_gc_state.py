"""A scan pauses Python's cyclic garbage collector while it runs and leaves it as it found it."""

from __future__ import annotations

import gc

import pytest

from tests.tools.scan.helpers import write
from tools.scan import ScanError, scan_repo


def test_the_collector_is_restored_after_a_scan_and_after_a_failed_one(tmp_path):
    root = write(tmp_path / "repo", {"k.cu": "#include <cuda.h>\n"})
    assert gc.isenabled()
    assert len(scan_repo(root)) == 1
    assert gc.isenabled()
    with pytest.raises(ScanError):
        scan_repo(tmp_path / "missing")
    assert gc.isenabled()
    gc.disable()
    try:
        scan_repo(root)
        assert not gc.isenabled()  # a caller that turned it off keeps it off
    finally:
        gc.enable()
