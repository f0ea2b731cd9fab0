"""The cheap checks of one patch: touched units on hipcc (in the sandbox) and on nvcc (host), the CUDA
preprocessor output unchanged, the targeted failure gone (agent.validate, engineer R).

A failure that appears inside the lines the patch wrote is the patch's fault (revert); one that
appears elsewhere in the unit was masked by the old first error (fix it in this wave, no rebuild).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from agent.nodes.build import diagnose_log
from agent.nodes.env import RunEnv
from agent.nodes.propose import same_failure
from tools.records import CheckResult, Failure, Proposal

_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")


@dataclass
class Verdict:
    """What the checks found for one patch."""

    checks: list[CheckResult] = field(default_factory=list)
    reason: str = ""
    """Empty when the patch may be kept."""
    unmasked: list[dict] = field(default_factory=list)
    """New failures outside the patch's lines: masked before, to be fixed in this wave."""
    unit_compiles: int = 0
    load_checks: int = 0
    applied: bool = True
    """False when the diff did not apply (nothing to revert)."""

    @property
    def ok(self) -> bool:
        return not self.reason


def changed_lines(diff: str) -> dict[str, set[int]]:
    """New-file line numbers each file's added lines occupy (where a patch's own errors would be)."""
    out: dict[str, set[int]] = {}
    current, line = None, 0
    for text in diff.splitlines():
        if text.startswith("+++ "):
            name = text[4:].split("\t")[0].strip()
            current = name[2:] if name.startswith("b/") else None if name == "/dev/null" else name
            out.setdefault(current, set()) if current else None
        elif (m := _HUNK.match(text)) and current:
            line = int(m.group(1))
        elif current and text.startswith("+"):
            out[current].add(line)
            line += 1
        elif current and not text.startswith("-") and not text.startswith("\\"):
            line += 1
    return out


def validate_compile(env: RunEnv, repo: Path, proposal: dict, open_failures: list[dict]) -> Verdict:
    """Engineer R's Validator (apply, hipcc + nvcc on touched units, CUDA -E identity, revert on failure),
    then a diagnosis of every unit that still fails: the patch's own errors revert it, the rest are
    failures the old first error masked."""
    from agent.validate import Toolchains, Validator, host_cuda_sandbox

    failure = Failure.from_dict(proposal["failure"])
    tools = Toolchains.from_profile(env.sandbox(), host_cuda_sandbox(repo), env.arch, env.profile)
    outcome = Validator(repo, tools).validate(Proposal.from_dict(proposal), failure)
    verdict = Verdict(checks=list(outcome.checks))
    verdict.unit_compiles = sum(1 for c in outcome.checks if c.name.startswith(("hipcc", "nvcc")))
    if not outcome.kept:  # the Validator already reverted it; no checks ran when it did not apply
        verdict.reason = outcome.reason
        verdict.applied = bool(outcome.checks)
        return verdict
    still_failing = [c.name.rsplit(" ", 1)[-1] for c in outcome.checks
                     if c.name.startswith("hipcc") and "unit still fails" in c.detail]
    for unit in still_failing:
        _diagnose_unit(env, repo, unit, proposal, open_failures, verdict)
    return verdict


def _diagnose_unit(env: RunEnv, repo: Path, unit: str, proposal: dict, open_failures: list[dict],
                   verdict: Verdict) -> None:
    """Compile a still-failing unit once more and sort its errors: the patch's own, or unmasked."""
    out = f"/tmp/rocport-unit-{abs(hash(unit)) % 10**8}.o"
    cmd = env.profile.unit.hip.format(file=unit, arch=env.arch, out=out, dir=str(Path(unit).parent), root=".")
    result, log = env.run(f"unit-hip-{unit}", cmd, timeout=900)
    verdict.unit_compiles += 1
    after = [f.to_dict() for f in diagnose_log(result.output, str(repo))]
    lines = changed_lines(proposal["diff"])
    own = [f for f in after if f.get("file") in lines and f.get("line") in lines[f["file"]]]
    if own and not verdict.reason:
        verdict.reason = f"the patch's own lines fail on hipcc: {own[0]['message'][:160]} (log {log})"
    for f in after:
        if f in own or any(same_failure(f, o) for o in open_failures + verdict.unmasked):
            continue
        verdict.unmasked.append(f)
