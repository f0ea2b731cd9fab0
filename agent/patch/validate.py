"""Validate a proposal before it is kept: apply it, compile the touched units with hipcc (ROCm) and
nvcc (CUDA, when present), prove the CUDA preprocessor output unchanged, and check the targeted
failure is gone. A proposal that fails any check is reverted and returned with the reasons.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from pathlib import Path

from agent.patch.guard_proof import CudaPremise, prove
from agent.patch.identity import CudaIdentity, first_error, same_tokens
from agent.patch.pycheck import python_checks
from agent.patch.targeted import failure_gone
from agent.patch.toolchains import (  # noqa: F401 - compile_hip_unit(s): callers import them from here
    Toolchains,
    _run_all,
    compile_both,
    compile_hip_unit,
    compile_hip_units,
    drop_warmups,
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

    def _compared(self, proposal: Proposal, proven: dict, same: bool) -> tuple[list[str], list[str]]:
        """What to preprocess for CUDA before and after: the touched files the text proof left (their
        identity checks) and, unless CUDA's input is proven unchanged, every unit the patch reaches: a unit
        whose CUDA tokens (both nvcc passes) stay the same is not compiled with nvcc again."""
        files = [f for f in proposal.files if f not in proven]
        reach = (
            []
            if same or self.tools.cuda is None
            else touched_units(self.root, proposal.files, self.tools.sources)
        )
        return files, [u for u in reach if u not in files]

    def validate(self, proposal: Proposal, failure: Failure | None = None, keep: bool = True) -> PatchOutcome:
        """Apply, check, and revert unless every check passes (or `keep` is False). The CUDA -E identity
        runs beside the work that does not need it: "before" beside the includers' indexing, "after"
        beside the hipcc compiles; nvcc then compiles the units whose CUDA tokens changed."""
        drop_warmups(self.tools, touched_units(self.root, proposal.files, self.tools.sources))
        proven, unchanged = self._proven(proposal)
        files, reach = self._compared(proposal, proven, unchanged)
        with ThreadPoolExecutor(max_workers=1) as side:
            pending = side.submit(self.identity.texts, files + reach)
            index_includers(self.tools, self.root, proposal.files)
            seen = pending.result()
            try:
                apply_diff(self.root, proposal.diff)
            except PatchError as exc:
                return PatchOutcome(proposal, applied=False, reason=str(exc))
            units = touched_units(self.root, proposal.files, self.tools.sources)
            after = side.submit(self.identity.texts, list(seen))
            chosen: list[str] = []

            def nvcc_units() -> list[str]:  # asked once the hipcc requests are out
                chosen[:] = (
                    [] if unchanged else [u for u in units if not same_tokens(seen, after.result(), u)]
                )
                return chosen

            try:
                hip, cuda = compile_both(self.tools, self.root, units, proposal.files, nvcc_units)
                before = {f: t for f, t in seen.items() if f in files}
                checks = [*proven.values(), *self.identity.checks(before, after.result())]
                compiled = dict(zip(chosen, cuda, strict=True))
                return self._judged(proposal, failure, checks, units, hip, compiled, keep, unchanged)
            except BaseException:
                wait([after])  # it reads the patched tree: revert only once it is done
                revert_diff(self.root, proposal.diff)
                raise

    def validate_together(
        self, group: list[tuple[Proposal, Failure | None]], upcoming: Sequence[Proposal] = ()
    ) -> list[PatchOutcome] | None:
        """Proposals that touch different units, applied together and all their units compiled in one
        parallel round (the CUDA -E identity of every member beside it, then that of the `upcoming` ones
        the caller checks next); each judged on its own units and reverted alone when not clean. None
        (nothing left applied) when a diff does not apply or the applied patches' units overlap after
        all: the caller then checks them one by one."""
        files = [f for proposal, _ in group for f in proposal.files]
        drop_warmups(self.tools, touched_units(self.root, files, self.tools.sources))
        proofs = [self._proven(proposal) for proposal, _ in group]
        compared = [
            self._compared(p, proven, same) for (p, _), (proven, same) in zip(group, proofs, strict=True)
        ]
        with ThreadPoolExecutor(max_workers=1) as side:
            pending = side.submit(lambda: [self.identity.texts(own + reach) for own, reach in compared])
            index_includers(self.tools, self.root, files)
            seens = pending.result()
            applied: list[Proposal] = []
            after: Future | None = None
            ahead: Future | None = None
            try:
                for proposal, _ in group:
                    apply_diff(self.root, proposal.diff)
                    applied.append(proposal)
                units = [touched_units(self.root, p.files, self.tools.sources) for p, _ in group]
                if len({u for us in units for u in us}) < sum(map(len, units)):
                    raise PatchError("the patches' units overlap once applied")
                after = side.submit(lambda: [self.identity.texts(list(b)) for b in seens])
                ahead = side.submit(self._before_texts, upcoming)
                chosen: list[str] = []

                def nvcc_units() -> list[str]:
                    new = after.result() if after is not None else []
                    chosen[:] = [
                        u
                        for us, (_, same), old, now in zip(units, proofs, seens, new, strict=True)
                        if not same
                        for u in us
                        if not same_tokens(old, now, u)
                    ]
                    return chosen

                hip, cuda = compile_both(
                    self.tools, self.root, [u for us in units for u in us], files, nvcc_units
                )
                afters = after.result()
            except BaseException as exc:
                wait([f for f in (after, ahead) if f is not None])  # they read the patched tree
                for proposal in reversed(applied):
                    revert_diff(self.root, proposal.diff)
                if isinstance(exc, PatchError):
                    return None
                raise
        outcomes, at, compiled = [], 0, dict(zip(chosen, cuda, strict=True))
        for (proposal, failure), seen, new, mine, (proven, same), (own_files, _) in zip(
            group, seens, afters, units, proofs, compared, strict=True
        ):
            own = slice(at, at + len(mine))
            at += len(mine)
            before = {f: t for f, t in seen.items() if f in own_files}
            checks = [*proven.values(), *self.identity.checks(before, new)]
            outcomes.append(self._judged(proposal, failure, checks, mine, hip[own], compiled, True, same))
        return outcomes

    def _before_texts(self, proposals: Sequence[Proposal]) -> None:
        """The CUDA -E texts that proposals checked after a group read first, made while the group's units
        compile (a core often idles there). The memo answers with them only while their files read the same;
        an error here is met again, and reported, by the check that needs them."""
        for proposal in proposals:
            self.identity.texts(
                [f for part in self._compared(proposal, *self._proven(proposal)) for f in part]
            )

    def _judged(
        self,
        proposal: Proposal,
        failure: Failure | None,
        identity: list[CheckResult],
        units: list[str],
        hip_results: list[CommandResult],
        cuda_results: dict[str, CommandResult],
        keep: bool,
        cuda_unchanged: bool = False,
    ) -> PatchOutcome:
        """The checks of one applied proposal from its CUDA identity checks and its units' compiles
        (`cuda_results`: the units nvcc compiled; the rest read the same for CUDA); reverted unless all pass."""
        checks = list(identity)
        py = [f for f in proposal.files if f.endswith(".py")]
        checks += python_checks(self.tools.hip, self.tools.python, self.root, py, proposal.diff)
        checks += self._hip(units, failure, hip_results, proposal.files)
        if self.tools.cuda is not None:
            why = (
                "its CUDA input is unchanged (above)"
                if cuda_unchanged
                else "its CUDA preprocessor output (nvcc's device and host pass) is the same tokens as before"
            )
            same = [rel for rel in units if rel not in cuda_results]
            checks += [
                CheckResult(name=f"nvcc {rel}", ok=True, detail=f"not recompiled: {why}") for rel in same
            ]
            compiled = [rel for rel in units if rel in cuda_results]
            checks += self._nvcc(
                compiled, proposal.diff, [cuda_results[u] for u in compiled], self.tools.cuda
            )
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
