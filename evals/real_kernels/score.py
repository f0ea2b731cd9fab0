"""Score `rocport fix` on one real kernel: hipcc gfx942, nvcc sm_90, CUDA identity, idempotence, clang-format.

Every check compiles the task's unit the way the task repo is laid out (root, then the task's further include
roots, on the include path):
hipcc in the ROCm image, nvcc on the host. CUDA identity compares nvcc -E token streams of the unit (its
device pass and its host pass) before and after the fix; the second run must commit nothing; clang-format
of the lines the fix touched must change nothing.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

import yaml

from tools import git as gitops
from tools.cpp.equivalence import cuda_tokens, normalize_warp_calls
from tools.repo_style import has_style

HIPCC = "hipcc -x hip -DUSE_ROCM --offload-arch={arch} {includes} -c {unit} -o /tmp/rocport-eval.o"
NVCC = "nvcc -x cu -std=c++17 -arch=sm_90 {includes} -c {unit} -o {out}"
NVCC_E = "nvcc -x cu -std=c++17 -arch=sm_90 {includes} -E {unit}"
NVCC_HOST_FLAGS = " -Xcompiler -U__CUDA_ARCH__"
"""nvcc's host pass (its -E shows the device pass, `__CUDA_ARCH__` defined)."""
PINNED = " -D__LINE__=0 -D__COUNTER__=0"
"""What rocport's CUDA identity proof pins (agent.patch.identity; evals may not import it): a guard added
above a macro that prints its line moves __LINE__ without changing what CUDA compiles otherwise."""
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@", re.MULTILINE)


@dataclass
class KernelScore:
    """What one kernel scored; `first_error` is hipcc's first error line after the fix (empty when it compiles)."""

    name: str
    hip_before: bool = False
    hip_after: bool = False
    nvcc_after: bool = False
    cuda_identical: bool = False
    idempotent: bool = False
    formatted: bool = False
    commits: int = 0
    first_error: str = ""
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def run(cmd: str, cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess:
    """Run one of the corpus's own compile command lines (written by us, never by a model)."""
    return subprocess.run(  # noqa: S602
        cmd, shell=True, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
    )


def _flags(includes: tuple[str, ...]) -> str:
    return " ".join(f"-I{shlex.quote(d)}" for d in includes)


def hipcc(
    repo: Path, unit: str, image: str, arch: str, includes: tuple[str, ...] = (".",)
) -> subprocess.CompletedProcess:
    """Compile the unit with the image's hipcc (no network, the repo mounted at its own path)."""
    inner = HIPCC.format(arch=arch, includes=_flags(includes), unit=shlex.quote(unit))
    return run(f"docker run --rm --network none -v {repo}:{repo} -w {repo} {image} {inner}", repo)


def first_error(output: str) -> str:
    return next((ln.strip()[:240] for ln in output.splitlines() if "error" in ln), "")


def nvcc_compiles(repo: Path, unit: str, includes: tuple[str, ...] = (".",)) -> bool:
    """The host nvcc compiles the unit; its object goes to a folder of this call's own, so evals running
    side by side never write one object file at once."""
    with tempfile.TemporaryDirectory(prefix="rocport-eval-") as tmp:
        cmd = NVCC.format(includes=_flags(includes), unit=shlex.quote(unit), out=shlex.quote(f"{tmp}/unit.o"))
        return run(cmd, repo).returncode == 0


def cuda_stream(
    repo: Path, unit: str, includes: tuple[str, ...] = (".",), pinned: bool = False
) -> list[str] | str:
    """The unit's CUDA tokens; `pinned`: with __LINE__/__COUNTER__ fixed, as rocport's identity proof
    reads them (PINNED), so lines added above a use do not count."""
    extra = PINNED if pinned else ""
    stream: list[str] = []
    for host in ("", NVCC_HOST_FLAGS):  # nvcc -E prints the device pass alone: the host pass is read too
        with tempfile.NamedTemporaryFile(suffix=".i") as tmp:
            cmd = NVCC_E.format(includes=_flags(includes), unit=shlex.quote(unit)) + extra + host
            res = run(f"{cmd} > {tmp.name}", repo)
            if res.returncode:
                return "nvcc -E failed: " + first_error(res.stderr)
            stream += [*cuda_tokens(Path(tmp.name).read_text(errors="replace")), "<host pass>"]
    return stream


def touched_lines(repo: Path, base: str) -> dict[str, list[tuple[int, int]]]:
    """File -> [start, end] ranges of lines the commits after `base` added or changed."""
    files = gitops.git(repo, "diff", "--name-only", base, "HEAD").split()
    out: dict[str, list[tuple[int, int]]] = {}
    for rel in files:
        if not rel.endswith((".cu", ".cuh", ".h", ".hpp", ".cpp", ".cc")) or not (repo / rel).exists():
            continue
        diff = gitops.run(repo, "diff", "-U0", base, "HEAD", "--", rel).stdout
        spans = [(int(s), int(s) + int(n or 1) - 1) for s, n in _HUNK.findall(diff) if n != "0"]
        if spans:
            out[rel] = spans
    return out


def format_clean(repo: Path, base: str) -> tuple[bool, list[str]]:
    """True when clang-format (the repo's .clang-format) would change none of the touched lines; files no
    .clang-format governs are not judged."""
    dirty = []
    for rel, spans in touched_lines(repo, base).items():
        if not has_style(repo, rel):  # the sdist ships no .clang-format: there is no repo style to follow
            continue
        lines = " ".join(f"--lines={a}:{b}" for a, b in spans)
        res = run(f"clang-format --style=file {lines} {shlex.quote(rel)}", repo)
        if res.returncode or res.stdout != (repo / rel).read_text():
            dirty.append(rel)
    return not dirty, dirty


def fix_profile(name: str, includes: tuple[str, ...], dest: Path) -> Path | None:
    """A profile YAML that tells `rocport fix` the task's include folders, as a user with a multi-root
    build would (its unit compiles then see them, like the harness's); None when the root is the only one."""
    if includes == (".",):
        return None
    extra = " ".join(f"-I{shlex.quote(d)}" for d in includes[1:])
    unit = "-I{dir} -I{root} " + extra
    profile = {
        "name": name,
        "description": "rocport real-kernel eval task: one header or unit, no server",
        "build": {"rocm": HIPCC.format(arch="{arch}", includes=_flags(includes), unit="UNIT")},
        "unit": {
            "hip": f"hipcc -x hip -DUSE_ROCM --offload-arch={{arch}} {unit} -c {{file}} -o {{out}}",
            "cuda": f"nvcc -x cu -arch=sm_90 {unit} -c {{file}} -o {{out}}",
            "cuda_preprocess": f"nvcc -x cu -arch=sm_90 -E {unit} {{file}}",
            "sources": ["**/*.cu", "**/*.cpp"],
        },
        "launch": {"command": "true"},
    }
    dest.write_text(yaml.safe_dump(profile, sort_keys=False))
    return dest


def rocport_fix(repo: Path, log: Path, arch: str, profile: Path | None = None) -> subprocess.CompletedProcess:
    rocport = Path(sys.executable).with_name("rocport")
    extra = f" --profile {profile}" if profile else ""
    return run(f"{rocport} fix {repo} --log {log} --arch {arch}{extra}", repo, timeout=3600)


def score(
    name: str, repo: Path, unit: str, image: str, arch: str, logs: Path, includes: tuple[str, ...] = (".",)
) -> KernelScore:
    """Fix the repo once, score it, then run the fix again on a fresh build log to check idempotence."""
    s = KernelScore(name)
    base = gitops.head(repo)
    profile = fix_profile(name, includes, logs / f"{name}.profile.yaml")
    before_tokens = cuda_stream(repo, unit, includes)
    pinned_before = cuda_stream(repo, unit, includes, pinned=True)  # as rocport's identity proof reads it
    first = hipcc(repo, unit, image, arch, includes)
    s.hip_before = first.returncode == 0
    log = logs / f"{name}.hipcc.log"
    log.write_text(first.stdout + first.stderr)
    if not s.hip_before:
        out = rocport_fix(repo, log, arch, profile)
        (logs / f"{name}.fix.log").write_text(out.stdout + out.stderr)
    s.commits = int(gitops.git(repo, "rev-list", "--count", f"{base}..HEAD") or 0)
    after = hipcc(repo, unit, image, arch, includes)
    s.hip_after = after.returncode == 0
    s.first_error = first_error(after.stdout + after.stderr)
    s.nvcc_after = nvcc_compiles(repo, unit, includes)
    after_tokens = cuda_stream(repo, unit, includes)
    s.cuda_identical = isinstance(before_tokens, list) and isinstance(after_tokens, list)
    if isinstance(before_tokens, list) and isinstance(after_tokens, list) and before_tokens != after_tokens:
        # a repo helper may spell a mask differently
        s.cuda_identical = normalize_warp_calls(before_tokens)[0] == normalize_warp_calls(after_tokens)[0]
        s.notes += ["CUDA tokens equal up to equal-valued warp-intrinsic masks/widths"] * s.cuda_identical
        if not s.cuda_identical and isinstance(pinned_before, list):
            s.cuda_identical = pinned_before == cuda_stream(repo, unit, includes, pinned=True)
            s.notes += ["CUDA tokens equal with __LINE__/__COUNTER__ pinned: only line numbers moved"] * (
                s.cuda_identical
            )
    s.formatted, dirty = format_clean(repo, base)
    s.notes += [f"clang-format would change {d}" for d in dirty]
    head = gitops.head(repo)
    log2 = logs / f"{name}.hipcc2.log"
    log2.write_text(after.stdout + after.stderr)
    if not s.hip_after:
        out = rocport_fix(repo, log2, arch, profile)
        (logs / f"{name}.fix2.log").write_text(out.stdout + out.stderr)
    s.idempotent = gitops.head(repo) == head and not gitops.dirty_files(repo)
    return s
