"""The CUDA `-E` identity proof of a patch: every touched C/C++ file preprocesses for CUDA to the same
tokens before and after it (line markers and spacing ignored), so the NVIDIA build compiles what it did.

nvcc's output for a kernel that includes cub or cutlass is megabytes (1.5M tokens): tokenizing it costs
about as much as the preprocessor run. Each output is kept as text with a digest of its non-blank lines
(line markers dropped); equal digests prove equal token streams (no C token spans a line, so blank lines
cannot change the stream) and are the common case, so the tokens are made only when the digests differ.
"""

from __future__ import annotations

import hashlib
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from agent.patch.preprocessed import MEMO
from tools.cpp.equivalence import LINE_MARKER, normalize_warp_calls, tokens
from tools.records import CheckResult

if TYPE_CHECKING:
    from agent.patch.toolchains import Toolchains

C_FILES = (".cu", ".cuh", ".cpp", ".cc", ".cxx", ".hip", ".h", ".hpp", ".hh", ".inl", ".c")
# __LINE__/__COUNTER__ expand to where a macro is used: a guard added above a use would change them on CUDA
# without changing what CUDA compiles, so the identity proof pins both (same flags before and after).
NEUTRAL_POSITION = " -D__LINE__=0 -D__COUNTER__=0"


@dataclass
class CudaText:
    """One file's CUDA preprocessor output, line markers dropped; its tokens are made on first use."""

    text: str
    digest: str = ""
    """sha256 of the non-blank lines: equal digests mean equal token streams."""
    _tokens: list[str] | None = field(default=None, repr=False)

    @classmethod
    def of(cls, preprocessed: str) -> CudaText:
        text = LINE_MARKER.sub("", preprocessed)
        lines = "\n".join(line for line in text.splitlines() if line.strip())
        return cls(text, hashlib.sha256(lines.encode()).hexdigest())

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

        return _fmt(self.tools.cuda_preprocess, self.root, rel, self.tools.arch) + NEUTRAL_POSITION

    def texts(self, files: list[str]) -> dict[str, CudaText | str]:
        """CUDA preprocessor output of existing C/C++ files (or the error text when nvcc -E failed)."""
        if self.tools.cuda is None:
            return {}
        return {
            rel: self._text(rel) for rel in files if rel.endswith(C_FILES) and (self.root / rel).is_file()
        }

    def _text(self, rel: str) -> CudaText | str:
        cmd = self.command(rel)
        remembered = MEMO.get(self.root, cmd)  # the previous proposal's "after" is often this "before"
        if remembered is not None or self.tools.cuda is None:
            return remembered or "no nvcc"
        # -E output is megabytes: sandboxes cap captured output, so it goes through a host file.
        with tempfile.NamedTemporaryFile(prefix="rocport-pp-", suffix=".i") as tmp:
            res = self.tools.cuda.run(f"{cmd} > {tmp.name}", timeout=self.tools.timeout)
            if not res.ok:
                return f"nvcc -E failed: {first_error(res.output)}"
            raw = Path(tmp.name).read_bytes()
        text = CudaText.of(raw.decode("utf-8", errors="replace"))
        MEMO.put(self.root, cmd, raw, text)
        return text

    def checks(self, before: dict, after: dict) -> list[CheckResult]:
        """One check per file preprocessed before the patch: its CUDA tokens are unchanged."""
        out = []
        for rel, old in before.items():
            new = after.get(rel)
            same, detail = False, ""
            if isinstance(old, CudaText) and isinstance(new, CudaText):
                same = old.digest == new.digest or old.tokens == new.tokens
                detail = "CUDA preprocessor output identical (tokens; line markers ignored)"
                if not same:
                    same, detail = _equal_valued(old.tokens, new.tokens)
            if not same:
                detail = (
                    old
                    if isinstance(old, str)
                    else new
                    if isinstance(new, str)
                    else f"CUDA preprocessor output changed ({_count(old)} -> {_count(new)} tokens)"
                )
            out.append(
                CheckResult(name=f"cuda -E identity {rel}", ok=same, detail=detail, cmd=self.command(rel))
            )
        return out
