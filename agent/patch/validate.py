"""Validate a proposal before it is kept: apply it, compile the touched units with hipcc (ROCm) and
nvcc (CUDA, when present), prove the CUDA preprocessor output unchanged, and check the targeted
failure is gone. A proposal that fails any check is reverted and returned with the reasons.
"""

from __future__ import annotations

import shlex
import shutil
import sys
import tempfile
from pathlib import Path

from agent.patch.preprocessed import MEMO
from agent.patch.toolchains import (  # noqa: F401 - re-exported: callers import them from here
    CUDA_PREPROCESS,
    CUDA_UNIT,
    HIP_UNIT,
    Toolchains,
    _fmt,
    _run_all,
    compile_both,
    compile_hip_unit,
    compile_hip_units,
    index_includers,
)
from agent.patch.units import touched_units
from sandboxes.base import CommandResult, Sandbox
from sandboxes.local import LocalSandbox
from tools.cpp.equivalence import cuda_tokens, normalize_warp_calls
from tools.git import evidence_lines
from tools.patching import PatchError, apply_diff, revert_diff
from tools.records import CheckResult, Failure, PatchOutcome, Proposal

C_FILES = (".cu", ".cuh", ".cpp", ".cc", ".cxx", ".hip", ".h", ".hpp", ".hh", ".inl", ".c")
# __LINE__/__COUNTER__ expand to where a macro is used: a guard added above a use would change them on CUDA
# without changing what CUDA compiles, so the identity proof pins both (same flags before and after).
NEUTRAL_POSITION = " -D__LINE__=0 -D__COUNTER__=0"


def first_error(output: str) -> str:
    """The first compiler line that mentions an error (else the last line), cut to 300 characters."""
    for line in output.splitlines():
        if "error" in line:
            return line.strip()[:300]
    lines = [ln for ln in output.splitlines() if ln.strip()]
    return lines[-1][:300] if lines else "no output"


def _check(name: str, result: CommandResult, ok: bool, detail: str) -> CheckResult:
    return CheckResult(
        name=name, ok=ok, detail=detail, cmd=result.cmd, duration_s=round(result.duration_s, 2)
    )


def failure_gone(failure: Failure | None, output: str) -> bool:
    """True when no error line of the compiler output mentions the failure's symbol (or message)."""
    if failure is None:
        return True
    needle = failure.symbol or failure.message
    errors = [ln for ln in output.splitlines() if "error" in ln or "fatal" in ln]
    return not any(needle and needle in ln for ln in errors)


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


class Validator:
    """Runs the checks for proposals against one repo checkout."""

    def __init__(self, root: Path, tools: Toolchains):
        self.root = Path(root).resolve()
        self.tools = tools

    def preprocess(self, files: list[str]) -> dict[str, list[str] | str]:
        """CUDA token streams of existing C/C++ files (or the error text when nvcc -E failed)."""
        out: dict[str, list[str] | str] = {}
        cuda = self.tools.cuda
        if cuda is None:
            return out
        for rel in files:
            if rel.endswith(C_FILES) and (self.root / rel).is_file():
                out[rel] = self._tokens(rel, cuda)
        return out

    def _tokens(self, rel: str, cuda: Sandbox) -> list[str] | str:
        cmd = _fmt(self.tools.cuda_preprocess, self.root, rel, self.tools.arch) + NEUTRAL_POSITION
        remembered = MEMO.get(self.root, cmd)  # the previous proposal's "after" is often this "before"
        if remembered is not None:
            return remembered
        # -E output is megabytes: sandboxes cap captured output, so it goes through a host file.
        with tempfile.NamedTemporaryFile(prefix="rocport-pp-", suffix=".i") as tmp:
            res = cuda.run(f"{cmd} > {tmp.name}", timeout=self.tools.timeout)
            if not res.ok:
                return f"nvcc -E failed: {first_error(res.output)}"
            raw = Path(tmp.name).read_bytes()
        stream = cuda_tokens(raw.decode("utf-8", errors="replace"))
        MEMO.put(self.root, cmd, raw, stream)
        return stream

    def _identity(self, before: dict, after: dict) -> list[CheckResult]:
        checks = []
        for rel, old in before.items():
            new = after.get(rel)
            same = isinstance(old, list) and old == new
            detail = "CUDA preprocessor output identical (tokens; line markers ignored)"
            if not same and isinstance(old, list) and isinstance(new, list):
                same, detail = _equal_valued(old, new)
            detail = (
                detail
                if same
                else (
                    old
                    if isinstance(old, str)
                    else new
                    if isinstance(new, str)
                    else f"CUDA preprocessor output changed ({len(old)} -> {len(new or [])} tokens)"
                )
            )
            cmd = _fmt(self.tools.cuda_preprocess, self.root, rel, self.tools.arch) + NEUTRAL_POSITION
            checks.append(CheckResult(name=f"cuda -E identity {rel}", ok=same, detail=detail, cmd=cmd))
        return checks

    def _python(self, files: list[str], diff: str) -> list[CheckResult]:
        """Touched Python files must byte-compile, then import in the build sandbox (see agent.patch.pycheck)."""
        from agent.patch.pycheck import import_check

        checks = []
        local = LocalSandbox(self.root)
        try:
            for rel in files:
                res = local.run(f"{shlex.quote(sys.executable)} -m py_compile {shlex.quote(rel)}", timeout=60)
                checks.append(
                    _check(
                        f"py_compile {rel}", res, res.ok, "compiles" if res.ok else first_error(res.output)
                    )
                )
                if res.ok:
                    checks.append(import_check(self.tools.hip, self.tools.python, self.root, rel, diff))
        finally:
            local.close()
        return checks

    def _hip(
        self, units: list[str], failure: Failure | None, results: list[CommandResult]
    ) -> list[CheckResult]:
        checks = []
        target = failure.facts.get("unit") or failure.file if failure else None
        for rel, res in zip(units, results, strict=True):
            gone = failure_gone(failure, res.output)
            if res.ok:
                checks.append(_check(f"hipcc {self.tools.arch} {rel}", res, True, "compiles"))
            elif gone:  # the targeted error is fixed; the unit has further, different errors
                checks.append(
                    _check(
                        f"hipcc {self.tools.arch} {rel}",
                        res,
                        True,
                        f"targeted failure gone; unit still fails: {first_error(res.output)}",
                    )
                )
            else:
                checks.append(
                    _check(
                        f"hipcc {self.tools.arch} {rel}",
                        res,
                        False,
                        f"targeted failure still reported{' in ' + target if target else ''}: "
                        f"{first_error(res.output)}",
                    )
                )
        return checks

    def _nvcc(
        self, units: list[str], diff: str, results: list[CommandResult], cuda: Sandbox
    ) -> list[CheckResult]:
        checks = []
        for rel, res in zip(units, results, strict=True):
            cmd = res.cmd
            if res.ok:
                checks.append(_check(f"nvcc {rel}", res, True, "compiles"))
                continue
            revert_diff(self.root, diff)  # did it compile before the patch? only then is it our fault
            before = (
                _run_all(self.tools, cuda, self.tools.cuda_service, [cmd])[0]
                if (self.root / rel).exists()
                else None
            )
            apply_diff(self.root, diff)
            broke = before is None or before.ok
            checks.append(
                _check(
                    f"nvcc {rel}",
                    res,
                    not broke,
                    ("the patch breaks the CUDA build: " if broke else "failed before the patch too: ")
                    + first_error(res.output),
                )
            )
        return checks

    def validate(self, proposal: Proposal, failure: Failure | None = None, keep: bool = True) -> PatchOutcome:
        """Apply, check, and revert unless every check passes (or `keep` is False)."""
        before = self.preprocess(proposal.files)
        index_includers(self.tools, self.root, proposal.files)
        try:
            apply_diff(self.root, proposal.diff)
        except PatchError as exc:
            return PatchOutcome(proposal, applied=False, reason=str(exc))
        units = touched_units(self.root, proposal.files, self.tools.sources)
        try:
            hip_results, cuda_results = compile_both(self.tools, self.root, units)
            return self._judged(proposal, failure, before, units, hip_results, cuda_results, keep)
        except BaseException:
            revert_diff(self.root, proposal.diff)
            raise

    def validate_together(self, group: list[tuple[Proposal, Failure | None]]) -> list[PatchOutcome] | None:
        """Proposals that touch different units, applied together and all their units compiled in one
        parallel round; each judged on its own units and reverted alone when not clean. None (nothing
        left applied) when a diff does not apply or the applied patches' units overlap after all: the
        caller then checks them one by one."""
        befores = [self.preprocess(proposal.files) for proposal, _ in group]
        index_includers(self.tools, self.root, [f for proposal, _ in group for f in proposal.files])
        applied: list[Proposal] = []
        try:
            for proposal, _ in group:
                apply_diff(self.root, proposal.diff)
                applied.append(proposal)
            units = [touched_units(self.root, p.files, self.tools.sources) for p, _ in group]
            if len({u for us in units for u in us}) < sum(map(len, units)):
                raise PatchError("the patches' units overlap once applied")
            hip, cuda = compile_both(self.tools, self.root, [u for us in units for u in us])
        except BaseException as exc:
            for proposal in reversed(applied):
                revert_diff(self.root, proposal.diff)
            if isinstance(exc, PatchError):
                return None
            raise
        outcomes, at = [], 0
        for (proposal, failure), before, mine in zip(group, befores, units, strict=True):
            own = slice(at, at + len(mine))
            at += len(mine)
            outcomes.append(self._judged(proposal, failure, before, mine, hip[own], cuda[own], True))
        return outcomes

    def _judged(
        self,
        proposal: Proposal,
        failure: Failure | None,
        before: dict,
        units: list[str],
        hip_results: list[CommandResult],
        cuda_results: list[CommandResult],
        keep: bool,
    ) -> PatchOutcome:
        """The checks of one applied proposal from its units' compiles; reverted unless all pass."""
        checks: list[CheckResult] = []
        checks += self._identity(before, self.preprocess(list(before)))
        checks += self._python([f for f in proposal.files if f.endswith(".py")], proposal.diff)
        checks += self._hip(units, failure, hip_results)
        if self.tools.cuda is not None:
            checks += self._nvcc(units, proposal.diff, cuda_results, self.tools.cuda)
        elif units:  # say so in the evidence rather than imply the CUDA side was checked
            checks.append(CheckResult(name="cuda checks", ok=True, detail="skipped: no nvcc on this machine"))
        bad = [c for c in checks if not c.ok]
        kept = not bad and keep
        if not kept:
            revert_diff(self.root, proposal.diff)
        reason = "; ".join(f"{c.name}: {c.detail}" for c in bad) or (
            "all checks passed" if checks else "nothing to compile"
        )
        return PatchOutcome(proposal, applied=kept, checks=checks, kept=kept, reason=reason)


def host_cuda_sandbox(root: Path) -> Sandbox | None:
    """A host sandbox for nvcc when nvcc is installed, else None (CUDA checks are skipped)."""
    if shutil.which("nvcc") is None:
        return None
    return LocalSandbox(root)


def evidence(outcome: PatchOutcome) -> str:
    """The checks as commit-message evidence lines: verdict, name, detail, command."""
    return evidence_lines(outcome.checks)
