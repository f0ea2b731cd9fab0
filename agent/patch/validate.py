"""Validate a proposal before it is kept: apply it, compile the touched units with hipcc (ROCm) and
nvcc (CUDA, when present), prove the CUDA preprocessor output unchanged, and check the targeted
failure is gone. A proposal that fails any check is reverted and returned with the reasons.
"""

from __future__ import annotations

import re
import shlex
import shutil
import sys
from concurrent.futures import Future, ThreadPoolExecutor, wait
from pathlib import Path

from agent.patch.guard_proof import CudaPremise, prove
from agent.patch.identity import CudaIdentity, first_error
from agent.patch.toolchains import (  # noqa: F401 - compile_hip_unit(s): callers import them from here
    Toolchains,
    _run_all,
    compile_both,
    compile_hip_unit,
    compile_hip_units,
    index_includers,
)
from agent.patch.units import touched_units
from sandboxes.base import CommandResult, Sandbox
from sandboxes.local import LocalSandbox
from tools.git import evidence_lines
from tools.patching import PatchError, apply_diff, revert_diff
from tools.records import CheckResult, Failure, PatchOutcome, Proposal


def _check(name: str, result: CommandResult, ok: bool, detail: str) -> CheckResult:
    return CheckResult(
        name=name, ok=ok, detail=detail, cmd=result.cmd, duration_s=round(result.duration_s, 2)
    )


_ERROR_AT = re.compile(r"^\s*(?P<path>[^\s:][^:]*):\d+(?::\d+)?:\s*(?:fatal\s+)?error\b")


def failure_gone(failure: Failure | None, output: str, touched: tuple[str, ...] | list[str] = ()) -> bool:
    """True when no error line of the compiler output mentions the failure's symbol (or message) in the
    failure's own file or a file the patch touched. The same symbol failing at `path:line: error` in
    another file is the next failure the fix unmasked (a second header of the closure including
    <cuda.h>), not the targeted one: that goes to the next wave."""
    if failure is None:
        return True
    needle = failure.symbol or failure.message
    errors = [ln for ln in output.splitlines() if "error" in ln or "fatal" in ln]
    hits = [ln for ln in errors if needle and needle in ln]
    if not hits or not failure.file:
        return not hits
    mine = (failure.file, *touched)
    for ln in hits:
        at = _ERROR_AT.match(ln)
        path = at["path"].removeprefix("./") if at else ""
        if not path or any(path == f or path.endswith("/" + f) for f in mine):
            return False  # where it was, in a file the patch changed, or a line that names no file
    return True


class Validator:
    """Runs the checks for proposals against one repo checkout."""

    def __init__(self, root: Path, tools: Toolchains):
        self.root = Path(root).resolve()
        self.tools = tools
        self.identity = CudaIdentity(self.root, tools)
        self.premise = (
            CudaPremise(self.root, [tools.cuda_unit, tools.cuda_preprocess]) if tools.cuda else None
        )

    def _proven(self, proposal: Proposal) -> tuple[dict[str, CheckResult], bool]:
        """The touched files whose CUDA identity the source text proves (agent.patch.guard_proof), and
        whether that covers everything nvcc could read, so the units need no nvcc compile either."""
        proven = prove(self.root, proposal.diff, proposal.files, self.premise)
        unchanged = bool(proven) and all(
            f in proven or f.endswith(".py") or not (self.root / f).exists() for f in proposal.files
        )
        return proven, unchanged

    def preprocess(self, files: list[str]) -> dict[str, list[str] | str]:
        """CUDA token streams of existing C/C++ files (or the error text when nvcc -E failed)."""
        return {rel: t if isinstance(t, str) else t.tokens for rel, t in self.identity.texts(files).items()}

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
        self,
        units: list[str],
        failure: Failure | None,
        results: list[CommandResult],
        touched: list[str] | tuple[str, ...] = (),
    ) -> list[CheckResult]:
        checks = []
        target = failure.facts.get("unit") or failure.file if failure else None
        for rel, res in zip(units, results, strict=True):
            gone = failure_gone(failure, res.output, touched)
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
        """Apply, check, and revert unless every check passes (or `keep` is False). The CUDA -E identity
        runs beside the work that does not need it: "before" beside the includers' indexing, "after"
        beside the compile round (hipcc and nvcc), not after it."""
        proven, unchanged = self._proven(proposal)
        with ThreadPoolExecutor(max_workers=1) as side:
            pending = side.submit(self.identity.texts, [f for f in proposal.files if f not in proven])
            index_includers(self.tools, self.root, proposal.files)
            before = pending.result()
            try:
                apply_diff(self.root, proposal.diff)
            except PatchError as exc:
                return PatchOutcome(proposal, applied=False, reason=str(exc))
            units = touched_units(self.root, proposal.files, self.tools.sources)
            after = side.submit(self.identity.texts, list(before))
            try:
                cuda_units = [] if unchanged else units
                hip_results, cuda_results = compile_both(
                    self.tools, self.root, units, proposal.files, cuda_units
                )
                checks = [*proven.values(), *self.identity.checks(before, after.result())]
                return self._judged(
                    proposal, failure, checks, units, hip_results, cuda_results, keep, unchanged
                )
            except BaseException:
                wait([after])  # it reads the patched tree: revert only once it is done
                revert_diff(self.root, proposal.diff)
                raise

    def validate_together(self, group: list[tuple[Proposal, Failure | None]]) -> list[PatchOutcome] | None:
        """Proposals that touch different units, applied together and all their units compiled in one
        parallel round (the CUDA -E identity of every member beside it); each judged on its own units and
        reverted alone when not clean. None (nothing left applied) when a diff does not apply or the
        applied patches' units overlap after all: the caller then checks them one by one."""
        files = [f for proposal, _ in group for f in proposal.files]
        proofs = [self._proven(proposal) for proposal, _ in group]
        with ThreadPoolExecutor(max_workers=1) as side:
            pending = side.submit(
                lambda: [
                    self.identity.texts([f for f in p.files if f not in proven])
                    for (p, _), (proven, _) in zip(group, proofs, strict=True)
                ]
            )
            index_includers(self.tools, self.root, files)
            befores = pending.result()
            applied: list[Proposal] = []
            after: Future | None = None
            try:
                for proposal, _ in group:
                    apply_diff(self.root, proposal.diff)
                    applied.append(proposal)
                units = [touched_units(self.root, p.files, self.tools.sources) for p, _ in group]
                if len({u for us in units for u in us}) < sum(map(len, units)):
                    raise PatchError("the patches' units overlap once applied")
                after = side.submit(lambda: [self.identity.texts(list(b)) for b in befores])
                nvcc_units = [u for us, (_, same) in zip(units, proofs, strict=True) if not same for u in us]
                hip, cuda = compile_both(
                    self.tools, self.root, [u for us in units for u in us], files, nvcc_units
                )
                afters = after.result()
            except BaseException as exc:
                if after is not None:
                    wait([after])
                for proposal in reversed(applied):
                    revert_diff(self.root, proposal.diff)
                if isinstance(exc, PatchError):
                    return None
                raise
        outcomes, at, at_cuda = [], 0, 0
        for (proposal, failure), before, new, mine, (proven, same) in zip(
            group, befores, afters, units, proofs, strict=True
        ):
            own = slice(at, at + len(mine))
            at += len(mine)
            own_cuda = slice(at_cuda, at_cuda if same else at_cuda + len(mine))
            at_cuda = own_cuda.stop
            checks = [*proven.values(), *self.identity.checks(before, new)]
            outcomes.append(
                self._judged(proposal, failure, checks, mine, hip[own], cuda[own_cuda], True, same)
            )
        return outcomes

    def _judged(
        self,
        proposal: Proposal,
        failure: Failure | None,
        identity: list[CheckResult],
        units: list[str],
        hip_results: list[CommandResult],
        cuda_results: list[CommandResult],
        keep: bool,
        cuda_unchanged: bool = False,
    ) -> PatchOutcome:
        """The checks of one applied proposal from its CUDA identity checks and its units' compiles;
        reverted unless all pass."""
        checks = list(identity)
        checks += self._python([f for f in proposal.files if f.endswith(".py")], proposal.diff)
        checks += self._hip(units, failure, hip_results, proposal.files)
        if self.tools.cuda is not None and cuda_unchanged:
            checks += [
                CheckResult(
                    name=f"nvcc {rel}", ok=True, detail="not recompiled: its CUDA input is unchanged (above)"
                )
                for rel in units
            ]
        elif self.tools.cuda is not None:
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
