"""CUDA preprocessor outputs (agent.patch.identity.CudaText) remembered by what the preprocessor read.

The CUDA `-E` identity proof preprocesses every touched file before and after each patch; in a wave the
tree one proposal leaves ("after") is the tree the next one starts from ("before"), and a reverted patch
puts back a tree already seen. A stream is reused while every file its line markers name still reads
the same (content inside the repo, size and mtime outside: the compile cache's direct mode, with its one
known limit: a new header that would shadow an old one on the include path is not noticed).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

from sandboxes.compile_deps import file_digest, preprocessed_deps

ENTRIES = 64
"""Streams kept per process (a stream is megabytes at most; a wave touches a few files)."""


class PreprocessedMemo:
    """Token streams keyed by (repo, command), each with the digests of the files it was made from."""

    def __init__(self, entries: int = ENTRIES):
        self.entries = entries
        self._memo: OrderedDict[tuple[str, str, tuple], Any] = OrderedDict()
        self._lock = threading.Lock()  # streams are made on several threads at once (CudaIdentity.texts)
        self.hits = 0

    def get(self, root: Path, cmd: str) -> Any:
        """The stream of `cmd` in `root` when all the files it read still read the same, else None."""
        with self._lock:
            mine = (str(root), cmd)
            candidates = [(key, stream) for key, stream in reversed(self._memo.items()) if key[:2] == mine]
        for key, stream in candidates:
            if all(file_digest(n, str(root)) == d for n, d in key[2]):
                with self._lock:
                    if key in self._memo:
                        self._memo.move_to_end(key)
                    self.hits += 1
                return stream
        return None

    def put(self, root: Path, cmd: str, preprocessed: bytes, stream: Any) -> None:
        """Remember `stream`, made by `cmd` in `root`, with what its preprocessor read."""
        deps = tuple(tuple(pair) for pair in preprocessed_deps(preprocessed, str(root)))
        with self._lock:
            self._memo[(str(root), cmd, deps)] = stream
            self._memo.move_to_end((str(root), cmd, deps))
            while len(self._memo) > self.entries:
                self._memo.popitem(last=False)


MEMO = PreprocessedMemo()
"""One per process: runs of an eval share it safely (keys hold the repo path and the file digests)."""
