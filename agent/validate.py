"""Validate a proposal before it is kept: apply it, compile the touched units with hipcc (ROCm) and
nvcc (CUDA, when present), prove the CUDA preprocessor output unchanged, and check the targeted
failure is gone. A proposal that fails any check is reverted and returned with the reasons.
"""
from __future__ import annotations

import re
import shlex
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from agent.units import HEADER_EXTS, touched_units
from sandboxes.base import CommandResult, Sandbox
from sandboxes.local import LocalSandbox
from tools.git import evidence_lines
from tools.patching import PatchError, apply_diff, revert_diff
from tools.records import CheckResult, Failure, PatchOutcome, Proposal

HIP_UNIT = "hipcc -x hip -DUSE_ROCM --offload-arch={arch} -I{dir} -I{root} -c {file} -o {out}"
CUDA_UNIT = "nvcc -x cu -arch=sm_90 -I{dir} -I{root} -c {file} -o {out}"
CUDA_PREPROCESS = "nvcc -x cu -arch=sm_90 -E -I{dir} -I{root} {file}"
C_FILES = (".cu", ".cuh", ".cpp", ".cc", ".cxx", ".hip", ".h", ".hpp", ".hh", ".inl", ".c")
# C/C++ tokens, string and char literals whole, so spacing and line markers do not matter.
_TOKEN = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|\w+|[^\s\w]')
# __LINE__/__COUNTER__ expand to where a macro is used: a guard added above a use would change them on CUDA
# without changing what CUDA compiles, so the identity proof pins both (same flags before and after).
NEUTRAL_POSITION = " -D__LINE__=0 -D__COUNTER__=0"
_LINE_MARKER = re.compile(r"^\s*#\s*(?:line\s+)?\d+(?:\s.*)?$", re.MULTILINE)


@dataclass
class Toolchains:
    """Where and how units are compiled. `hip` runs hipcc (the ROCm image, or the host); `cuda` runs nvcc."""

    hip: Sandbox
    arch: str = "gfx942"
    cuda: Sandbox | None = None
    hip_unit: str = HIP_UNIT
    cuda_unit: str = CUDA_UNIT
    cuda_preprocess: str = CUDA_PREPROCESS
    sources: list[str] | None = None
    timeout: float = 600
    extra_env: dict[str, str] = field(default_factory=dict)
    python: str = "python3"
    """The interpreter in the `hip` sandbox that imports touched Python modules (the build image's)."""

    def close(self) -> None:
        """Close the sandboxes (containers are removed)."""
        for box in (self.hip, self.cuda):
            if box is not None:
                box.close()

    @classmethod
    def from_profile(cls, hip: Sandbox, cuda: Sandbox | None, arch: str, profile=None) -> Toolchains:
        """Templates from the profile's `unit` section when given, else the defaults above."""
        unit = getattr(profile, "unit", None)
        if unit is None:
            return cls(hip=hip, cuda=cuda, arch=arch)
        return cls(hip=hip, cuda=cuda, arch=arch, hip_unit=unit.hip, cuda_unit=unit.cuda or CUDA_UNIT,
                   cuda_preprocess=unit.cuda_preprocess or CUDA_PREPROCESS, sources=list(unit.sources))


def cuda_tokens(preprocessed: str) -> list[str]:
    """The token stream of preprocessor output, line markers and whitespace dropped."""
    return _TOKEN.findall(_LINE_MARKER.sub("", preprocessed))


def _fmt(template: str, root: Path, rel: str, arch: str, lang: str = "cu") -> str:
    """A unit command with repo-relative paths (commands run in the repo root, host or container).

    A header checked on its own needs an explicit language (`-x cu` / `-x hip`) when the template has none."""
    out = f"/tmp/rocport-unit-{abs(hash((str(root), rel))) % 10**8}.o"
    parent = str(Path(rel).parent)
    if rel.endswith(HEADER_EXTS) and " -x " not in f" {template} ":
        compiler, _, rest = template.partition(" ")
        template = f"{compiler} -x {lang} {rest}"
    return template.format(file=shlex.quote(rel), arch=arch, out=out, dir=shlex.quote(parent), root=".")


def compile_hip_unit(tools: Toolchains, root: Path, rel: str) -> CommandResult:
    """Compile one translation unit (or header) for the ROCm target with the profile's template."""
    return tools.hip.run(_fmt(tools.hip_unit, root, rel, tools.arch, "hip"), env=tools.extra_env or None,
                         timeout=tools.timeout)


def first_error(output: str) -> str:
    """The first compiler line that mentions an error (else the last line), cut to 300 characters."""
    for line in output.splitlines():
        if "error" in line:
            return line.strip()[:300]
    lines = [ln for ln in output.splitlines() if ln.strip()]
    return lines[-1][:300] if lines else "no output"


def _check(name: str, result: CommandResult, ok: bool, detail: str) -> CheckResult:
    return CheckResult(name=name, ok=ok, detail=detail, cmd=result.cmd, duration_s=round(result.duration_s, 2))


def failure_gone(failure: Failure | None, output: str) -> bool:
    """True when no error line of the compiler output mentions the failure's symbol (or message)."""
    if failure is None:
        return True
    needle = failure.symbol or failure.message
    errors = [ln for ln in output.splitlines() if "error" in ln or "fatal" in ln]
    return not any(needle and needle in ln for ln in errors)


class Validator:
    """Runs the checks for proposals against one repo checkout."""

    def __init__(self, root: Path, tools: Toolchains):
        self.root = Path(root).resolve()
        self.tools = tools

    def preprocess(self, files: list[str]) -> dict[str, list[str] | str]:
        """CUDA token streams of existing C/C++ files (or the error text when nvcc -E failed)."""
        out: dict[str, list[str] | str] = {}
        if self.tools.cuda is None:
            return out
        for rel in files:
            if rel.endswith(C_FILES) and (self.root / rel).is_file():
                out[rel] = self._tokens(rel)
        return out

    def _tokens(self, rel: str) -> list[str] | str:
        # -E output is megabytes: sandboxes cap captured output, so it goes through a host file.
        with tempfile.NamedTemporaryFile(prefix="rocport-pp-", suffix=".i") as tmp:
            cmd = _fmt(self.tools.cuda_preprocess, self.root, rel, self.tools.arch) + NEUTRAL_POSITION
            res = self.tools.cuda.run(f"{cmd} > {tmp.name}", timeout=self.tools.timeout)
            if not res.ok:
                return f"nvcc -E failed: {first_error(res.output)}"
            return cuda_tokens(Path(tmp.name).read_text(encoding="utf-8", errors="replace"))

    def _identity(self, before: dict, after: dict) -> list[CheckResult]:
        checks = []
        for rel, old in before.items():
            new = after.get(rel)
            same = isinstance(old, list) and old == new
            detail = "CUDA preprocessor output identical (tokens; line markers ignored)" if same else \
                (old if isinstance(old, str) else new if isinstance(new, str) else
                 f"CUDA preprocessor output changed ({len(old)} -> {len(new or [])} tokens)")
            cmd = _fmt(self.tools.cuda_preprocess, self.root, rel, self.tools.arch) + NEUTRAL_POSITION
            checks.append(CheckResult(name=f"cuda -E identity {rel}", ok=same, detail=detail, cmd=cmd))
        return checks

    def _python(self, files: list[str], diff: str) -> list[CheckResult]:
        """Touched Python files must byte-compile, then import in the build sandbox (see agent.pycheck)."""
        from agent.pycheck import import_check

        checks = []
        local = LocalSandbox(self.root)
        try:
            for rel in files:
                res = local.run(f"{shlex.quote(sys.executable)} -m py_compile {shlex.quote(rel)}", timeout=60)
                checks.append(_check(f"py_compile {rel}", res, res.ok,
                                     "compiles" if res.ok else first_error(res.output)))
                if res.ok:
                    checks.append(import_check(self.tools.hip, self.tools.python, self.root, rel, diff))
        finally:
            local.close()
        return checks

    def _hip(self, units: list[str], failure: Failure | None) -> list[CheckResult]:
        checks = []
        target = failure.facts.get("unit") or failure.file if failure else None
        for rel in units:
            res = compile_hip_unit(self.tools, self.root, rel)
            gone = failure_gone(failure, res.output)
            if res.ok:
                checks.append(_check(f"hipcc {self.tools.arch} {rel}", res, True, "compiles"))
            elif gone:  # the targeted error is fixed; the unit has further, different errors
                checks.append(_check(f"hipcc {self.tools.arch} {rel}", res, True,
                                     f"targeted failure gone; unit still fails: {first_error(res.output)}"))
            else:
                checks.append(_check(f"hipcc {self.tools.arch} {rel}", res, False,
                                     f"targeted failure still reported{' in ' + target if target else ''}: "
                                     f"{first_error(res.output)}"))
        return checks

    def _nvcc(self, units: list[str], diff: str) -> list[CheckResult]:
        checks = []
        for rel in units:
            cmd = _fmt(self.tools.cuda_unit, self.root, rel, self.tools.arch)
            res = self.tools.cuda.run(cmd, timeout=self.tools.timeout)
            if res.ok:
                checks.append(_check(f"nvcc {rel}", res, True, "compiles"))
                continue
            revert_diff(self.root, diff)  # did it compile before the patch? only then is it our fault
            before = self.tools.cuda.run(cmd, timeout=self.tools.timeout) if (self.root / rel).exists() else None
            apply_diff(self.root, diff)
            broke = before is None or before.ok
            checks.append(_check(f"nvcc {rel}", res, not broke,
                                 ("the patch breaks the CUDA build: " if broke else "failed before the patch too: ")
                                 + first_error(res.output)))
        return checks

    def validate(self, proposal: Proposal, failure: Failure | None = None, keep: bool = True) -> PatchOutcome:
        """Apply, check, and revert unless every check passes (or `keep` is False)."""
        before = self.preprocess(proposal.files)
        try:
            apply_diff(self.root, proposal.diff)
        except PatchError as exc:
            return PatchOutcome(proposal, applied=False, reason=str(exc))
        units = touched_units(self.root, proposal.files, self.tools.sources)
        checks: list[CheckResult] = []
        try:
            checks += self._identity(before, self.preprocess(list(before)))
            checks += self._python([f for f in proposal.files if f.endswith(".py")], proposal.diff)
            checks += self._hip(units, failure)
            if self.tools.cuda is not None:
                checks += self._nvcc(units, proposal.diff)
            elif units:  # say so in the evidence rather than imply the CUDA side was checked
                checks.append(CheckResult(name="cuda checks", ok=True, detail="skipped: no nvcc on this machine"))
        except BaseException:
            revert_diff(self.root, proposal.diff)
            raise
        bad = [c for c in checks if not c.ok]
        kept = not bad and keep
        if not kept:
            revert_diff(self.root, proposal.diff)
        reason = "; ".join(f"{c.name}: {c.detail}" for c in bad) or ("all checks passed" if checks else
                                                                      "nothing to compile")
        return PatchOutcome(proposal, applied=kept, checks=checks, kept=kept, reason=reason)


def host_cuda_sandbox(root: Path) -> Sandbox | None:
    """A host sandbox for nvcc when nvcc is installed, else None (CUDA checks are skipped)."""
    if shutil.which("nvcc") is None:
        return None
    return LocalSandbox(root)


def evidence(outcome: PatchOutcome) -> str:
    """The checks as commit-message evidence lines: verdict, name, detail, command."""
    return evidence_lines(outcome.checks)
