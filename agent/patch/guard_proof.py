"""The CUDA identity of a guard patch proven from the source text, without nvcc (tools/cpp/cuda_view):
a patch that only adds or moves lines into groups ROCm macros decide leaves nvcc's input unchanged in
every unit that reads the file, so neither `nvcc -E` before and after nor an nvcc compile is needed.

The proof rests on one premise, checked here for the repo and the unit commands: the ROCm macros it
resolves are never defined for CUDA. A macro the repo `#define`s anywhere, or a CUDA command passes
with -D, is left out (its groups then fall to the `-E` proof). A file the patch creates must not share
its name with any header the repo includes (it could shadow one on CUDA's include path).
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from agent.patch.identity import C_FILES
from agent.patch.units import source_files
from tools.cpp.cuda_view import same_for_cuda
from tools.files import read_regular_text
from tools.patching import preview
from tools.records import CheckResult

ROCM_ONLY = ("USE_ROCM", "__HIP_PLATFORM_AMD__", "__HIP_PLATFORM_HCC__", "__HIPCC__", "__HIP__")
"""Defined by hip-clang or a ROCm build's -DUSE_ROCM; nvcc defines none of them."""
_DEFINE = re.compile(
    r"^[ \t]*#[ \t]*define[ \t]+(" + "|".join(map(re.escape, ROCM_ONLY)) + r")\b", re.MULTILINE
)
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]([^>"\n]+)[>"]', re.MULTILINE)
PROVEN = "CUDA lines unchanged: the patch only adds or moves lines into groups that {macros} decide{note}"


class CudaPremise:
    """What the repo itself says about the ROCm macros and its included header names, per file
    remembered by size and mtime (a wave's kept patches change a few files; the rest are not reread)."""

    def __init__(self, root: Path, cuda_commands: list[str]):
        self.root = Path(root)
        self.flags = " ".join(cuda_commands)
        self._files: dict[str, tuple[tuple[int, int], set[str], set[str]]] = {}

    def _scan(self) -> tuple[set[str], set[str]]:
        defined: set[str] = set()
        included: set[str] = set()
        inside = os.path.realpath(self.root) + os.sep
        for rel in source_files(self.root):
            if not os.path.realpath(self.root / rel).startswith(inside):
                # a source linked to a file out of the repo is never read: what it defines is unknown
                defined |= set(ROCM_ONLY)
                continue
            try:
                st = os.stat(self.root / rel)
            except OSError:
                continue
            if not stat.S_ISREG(st.st_mode):  # a fifo or device named like a source is never opened
                continue
            stamp = (st.st_size, st.st_mtime_ns)
            known = self._files.get(rel)
            if known is None or known[0] != stamp:
                try:
                    text = read_regular_text(self.root / rel)
                except OSError:
                    continue
                names = set(_DEFINE.findall(text)) if "define" in text else set()
                heads = {os.path.basename(h) for h in _INCLUDE.findall(text)}
                known = self._files[rel] = (stamp, names, heads)
            defined |= known[1]
            included |= known[2]
        return defined, included

    def undefined_for_cuda(self) -> tuple[frozenset[str], set[str]]:
        """(the ROCm macros CUDA never sees defined, the base names of every header the repo includes)."""
        defined, included = self._scan()
        passed = {m for m in ROCM_ONLY if re.search(rf"-D\s*{re.escape(m)}\b", self.flags)}
        return frozenset(m for m in ROCM_ONLY if m not in defined | passed), included


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def prove(root: Path, diff: str, files: list[str], premise: CudaPremise | None) -> dict[str, CheckResult]:
    """The files of `files` (existing C/C++ sources and headers) whose CUDA identity the text proves,
    each with its check; {} when the premise does not hold or a created file could shadow a header."""
    if premise is None:
        return {}
    existing = [f for f in files if f.endswith(C_FILES) and _regular(Path(root) / f)]
    created = [f for f in files if f.endswith(C_FILES) and not (Path(root) / f).exists()]
    if not existing:
        return {}
    undefined, included = premise.undefined_for_cuda()
    if not undefined or any(os.path.basename(f) in included for f in created):
        return {}
    after = preview(root, diff, existing)
    proven: dict[str, CheckResult] = {}
    for rel in existing:
        new = after.get(rel)
        old = read_regular_text(Path(root) / rel)
        if new is not None and same_for_cuda(old, new, undefined):
            note = f"; created {', '.join(created)} is not read by CUDA" if created else ""
            detail = PROVEN.format(macros="/".join(sorted(undefined)), note=note)
            proven[rel] = CheckResult(name=f"cuda identity {rel}", ok=True, detail=detail, cmd="")
    return proven
