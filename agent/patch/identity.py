"""The CUDA `-E` identity proof of a patch: every touched C/C++ file preprocesses for CUDA to the same
tokens before and after it, in nvcc's device pass and its host pass (line markers and spacing ignored), so the
NVIDIA build compiles what it did.

nvcc's output for a kernel that includes cub or cutlass is megabytes (1.5M tokens): tokenizing it costs
about as much as the preprocessor run. Each output is kept as text with a digest of its non-blank lines
(line markers dropped); equal digests prove equal token streams (no C token spans a line, so blank lines
cannot change the stream) and are the common case, so the tokens are made only when the digests differ.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from agent.patch.preprocessed import MEMO
from agent.patch.units import HEADER_EXTS, SOURCE_EXTS, touched_units
from tools.cpp.equivalence import LINE_MARKER, normalize_warp_calls, tokens
from tools.records import CheckResult

if TYPE_CHECKING:
    from agent.patch.toolchains import Toolchains

C_FILES = (".cu", ".cuh", ".cpp", ".cc", ".cxx", ".hip", ".h", ".hpp", ".hh", ".inl", ".c")
# __LINE__/__COUNTER__ expand to where a macro is used: a guard added above a use would change them on CUDA
# without changing what CUDA compiles, so the identity proof pins both (same flags before and after).
NEUTRAL_POSITION = " -D__LINE__=0 -D__COUNTER__=0"
NVCC_HOST_FLAGS = " -Xcompiler -U__CUDA_ARCH__"
"""`nvcc -E` prints its device pass only (`__CUDA_ARCH__` defined), so a change under `#ifndef __CUDA_ARCH__`
(host code) would pass unseen: nvcc's input is preprocessed a second time as its host pass sees it."""
HOST_MARK = b"\nrocport_cuda_host_pass\n"
"""Between the two passes in one stream (the same line on both sides of a comparison)."""
# A header's own -E output holds none of its macros (its includers expand them), so an unguarded change of
# a macro's value would pass unseen: a header is preprocessed with -dD and the macros the header itself
# defines for CUDA are compared too (those of the headers it includes, and command-line ones, are dropped).
# A macro the patch adds under a new name is allowed (a compat helper's CUDA branch); one whose CUDA
# definition changed or went away is not.
_MARKER = re.compile(r'^#\s*(?:line\s+)?\d+\s+"((?:[^"\\]|\\.)*)"')
_MACRO = re.compile(r"^[ \t]*#[ \t]*(define|undef)[ \t]+(\w+)(.*)$", re.MULTILINE)


def own_defines_only(preprocessed: str, rel: str, root: Path) -> str:
    """`preprocessed` (made with -dD) without the #define/#undef lines of any file but `rel`."""
    own = {rel, f"./{rel}", str(root / rel)}
    current, out = "", []
    for line in preprocessed.splitlines():
        marker = _MARKER.match(line)
        if marker:
            current = marker.group(1)
        elif _MACRO.match(line) and current not in own:
            continue
        out.append(line)
    return "\n".join(out) + "\n"


@dataclass
class CudaText:
    """One file's CUDA preprocessor output, line markers dropped; its tokens are made on first use."""

    text: str
    digest: str = ""
    """sha256 of the non-blank lines: equal digests mean equal token streams."""
    macros: dict[str, str | None] = field(default_factory=dict)
    """A header's own macros for CUDA (-dD): name -> its last definition, None when #undef'd last."""
    _tokens: list[str] | None = field(default=None, repr=False)

    @classmethod
    def of(cls, preprocessed: str) -> CudaText:
        text = LINE_MARKER.sub("", preprocessed)
        # only a header's -dD output has macro lines; one regex pass over the text finds them (no Python
        # step per line of a unit's megabytes)
        macros = {m[2]: " ".join(m[3].split()) if m[1] == "define" else None for m in _MACRO.finditer(text)}
        if macros:
            text = _MACRO.sub("", text)
        lines = "\n".join(line for line in text.splitlines() if line.strip())
        return cls(text, hashlib.sha256(lines.encode()).hexdigest(), macros)

    def changed_macros(self, after: CudaText) -> list[str]:
        """This header's CUDA macros whose definition `after` changed or dropped (new names are fine)."""
        return sorted(n for n, body in self.macros.items() if after.macros.get(n, "\0gone") != body)

    @property
    def tokens(self) -> list[str]:
        if self._tokens is None:
            self._tokens = tokens(self.text)
        return self._tokens


def _equal_valued(old: list[str], new: list[str]) -> tuple[bool, str]:
    """Token streams equal once warp-intrinsic masks/widths are spelled canonically (a repo helper macro
    such as VLLM_SHFL_XOR_SYNC_WIDTH expands to the same call with `uint32_t(-1)` for `0xffffffff`)."""
    (a, _), (b, changed) = normalize_warp_calls(old), normalize_warp_calls(new)
    if a != b:
        return False, ""
    return True, (
        f"CUDA preprocessor output identical except how {changed} warp-intrinsic call(s) spell equal "
        f"values (full mask, width 32 = CUDA's default warpSize, parentheses)"
    )


def first_error(output: str) -> str:
    """The first compiler line that mentions an error (else the last line), cut to 300 characters."""
    for line in output.splitlines():
        if "error" in line:
            return line.strip()[:300]
    lines = [ln for ln in output.splitlines() if ln.strip()]
    return lines[-1][:300] if lines else "no output"


def _count(text: CudaText | str | None) -> int:
    return len(text.tokens) if isinstance(text, CudaText) else 0


class CudaIdentity:
    """Preprocesses touched files for CUDA (memoised, see agent.patch.preprocessed) and compares them."""

    def __init__(self, root: Path, tools: Toolchains):
        self.root = root
        self.tools = tools

    def command(self, rel: str) -> str:
        from agent.patch.toolchains import _fmt

        cmd = _fmt(self.tools.cuda_preprocess, self.root, rel, self.tools.arch) + NEUTRAL_POSITION
        if not rel.endswith(HEADER_EXTS):
            return cmd
        nvcc = Path(self.tools.cuda_preprocess.split(maxsplit=1)[0]).name == "nvcc"
        return cmd + (" -Xcompiler -dD" if nvcc else " -dD")

    def texts(self, files: list[str]) -> dict[str, CudaText | str]:
        """CUDA preprocessor output of existing C/C++ files (or the error text when nvcc -E failed); a source
        another source #includes is read through the units that include it (proof_files)."""
        if self.tools.cuda is None:
            return {}
        real = [rel for rel in files if rel.endswith(C_FILES) and (self.root / rel).is_file()]
        proofs = list(dict.fromkeys(proof for rel in real for proof in self.proof_files(rel)))
        if len(proofs) < 2:
            return {proof: self._text(proof) for proof in proofs}
        # nvcc runs outside the GIL: the files' -E passes run side by side, up to the cores
        with ThreadPoolExecutor(max_workers=min(len(proofs), os.cpu_count() or 2)) as pool:
            return dict(zip(proofs, pool.map(self._text, proofs), strict=True))

    def proof_files(self, rel: str) -> list[str]:
        """What proves `rel` for CUDA: itself, or, for a source other sources #include (a unity build, or a
        file its includer instantiates with #defines of its own: alone it may stop at an `#error`), the
        units that include it, as the build compiles it."""
        if not rel.endswith(SOURCE_EXTS):
            return [rel]
        return touched_units(self.root, [rel], self.tools.sources) or [rel]

    def _text(self, rel: str) -> CudaText | str:
        cmd = self.command(rel)
        remembered = MEMO.get(self.root, cmd)  # the previous proposal's "after" is often this "before"
        if remembered is not None or self.tools.cuda is None:
            return remembered or "no nvcc"
        nvcc = Path(self.tools.cuda_preprocess.split(maxsplit=1)[0]).name == "nvcc"
        # -E output is megabytes: sandboxes cap captured output, so it goes through host files. nvcc's two
        # passes run at once; the command fails when either does.
        with tempfile.TemporaryDirectory(prefix="rocport-pp-") as tmp:
            device, host = Path(tmp, "device.i"), Path(tmp, "host.i")
            shell = f"{cmd} > {device}"
            if nvcc:
                shell = f"{shell} & pid=$!; {cmd}{NVCC_HOST_FLAGS} > {host}; rc=$?; wait $pid && exit $rc"
            res = self.tools.cuda.run(shell, timeout=self.tools.timeout)
            if not res.ok:
                return f"nvcc -E failed: {first_error(res.output)}"
            raw = device.read_bytes() + (HOST_MARK + host.read_bytes() if nvcc else b"")
        decoded = raw.decode("utf-8", errors="replace")
        if rel.endswith(HEADER_EXTS):
            decoded = own_defines_only(decoded, rel, self.root)
        text = CudaText.of(decoded)
        MEMO.put(self.root, cmd, raw, text)
        return text

    def checks(self, before: dict, after: dict) -> list[CheckResult]:
        """One check per file preprocessed before the patch: its CUDA tokens (and a header's own CUDA macros)
        are unchanged."""
        out = []
        for rel, old in before.items():
            ok, detail = _compare(old, after.get(rel))
            out.append(
                CheckResult(name=f"cuda -E identity {rel}", ok=ok, detail=detail, cmd=self.command(rel))
            )
        return out


def same_tokens(before: dict, after: dict, rel: str) -> bool:
    """`rel` reads the same tokens for CUDA in both maps of CudaIdentity.texts (nvcc's error on either
    side, or a file on one side only, is not the same): what nvcc compiles did not change."""
    old, new = before.get(rel), after.get(rel)
    if not isinstance(old, CudaText) or not isinstance(new, CudaText):
        return False
    return old.digest == new.digest or old.tokens == new.tokens


def _compare(old: CudaText | str | None, new: CudaText | str | None) -> tuple[bool, str]:
    """(same for CUDA, why): a string on either side is nvcc's error."""
    if isinstance(old, str) or isinstance(new, str):
        return False, old if isinstance(old, str) else str(new)
    if old is None or new is None:  # the file is gone after the patch
        return False, f"CUDA preprocessor output changed ({_count(old)} -> {_count(new)} tokens)"
    same = old.digest == new.digest or old.tokens == new.tokens
    detail = "CUDA preprocessor output identical (tokens; line markers ignored)"
    if not same:
        same, detail = _equal_valued(old.tokens, new.tokens)
    if not same:
        return False, f"CUDA preprocessor output changed ({_count(old)} -> {_count(new)} tokens)"
    if changed := old.changed_macros(new):
        return False, "CUDA macro definition changed: " + ", ".join(
            f"{n} ({old.macros[n]!r} -> {new.macros.get(n, 'removed')!r})" for n in changed[:5]
        )
    return True, detail
