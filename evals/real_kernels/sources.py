"""Real-kernel eval tasks: fetch the public sdist a task names, and lay the kernel out as a small git repo.

Nothing third-party is committed: a task file names the package, version and path; the sdist is
downloaded from PyPI at eval time into ~/.cache/rocport-evals (or $ROCPORT_EVALS_CACHE) and the task repo
is built there from it, with the kernel, the headers it includes (transitively) and the project's
.clang-format. A task may add a small instantiating unit of our own (`unit:`) that includes the kernel,
and further include folders of the package's build (`include_roots:`, e.g. a vendored library's root).
A task whose package is `own` is a kernel we wrote ourselves (its `unit` is all of it; nothing is
downloaded): it says so in its name and notes, and which public kernel's idiom it reproduces.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tarfile
import urllib.request
from pathlib import Path
from urllib.parse import urljoin

import yaml
from pydantic import BaseModel, ConfigDict

from tools import git as gitops

TASKS_DIR = Path(__file__).resolve().parent
CACHE = Path(os.environ.get("ROCPORT_EVALS_CACHE", Path.home() / ".cache" / "rocport-evals"))
_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.MULTILINE)
UNIT = "rocport_eval_unit.cu"
OWN = "own"


class KernelTask(BaseModel):
    """One real kernel: where it comes from and how it is compiled on its own."""

    model_config = ConfigDict(extra="forbid")
    name: str
    package: str
    """The PyPI package whose sdist holds the kernel (vllm, flashinfer-python), or `own` (ours, in `unit`)."""
    version: str
    path: str
    """The kernel's path inside the sdist (e.g. csrc/quantization/gptq/matrix_view.cuh)."""
    include_root: str
    """The sdist folder the project's includes are relative to; it becomes the task repo's root."""
    include_roots: list[str] = []
    """Further sdist folders on the include path, as the package's build passes them (-I), inside
    include_root: a header found there is laid out at its path in the repo and compiled with one -I each."""
    unit: str | None = None
    """Our own instantiating .cu (C++ text) when the kernel is a header; it includes the kernel."""
    notes: str = ""


def load_tasks(split: str) -> list[KernelTask]:
    """The tasks of one split (`dev` or `test`), in name order."""
    folder = TASKS_DIR / split
    if not folder.is_dir():
        raise ValueError(f"no split {split!r}: expected one of dev, test under {TASKS_DIR}")
    return [KernelTask(name=p.stem, **yaml.safe_load(p.read_text())) for p in sorted(folder.glob("*.yaml"))]


def fetch_sdist(package: str, version: str, cache: Path = CACHE) -> Path:
    """The extracted sdist folder, downloaded from PyPI once (the JSON API names the sdist's URL)."""
    dest = cache / "sdists"
    dest.mkdir(parents=True, exist_ok=True)
    index = f"https://pypi.org/pypi/{package}/json"
    with urllib.request.urlopen(index, timeout=60) as resp:
        release = json.load(resp)["releases"].get(version, [])
    files = [u for u in release if u["packagetype"] == "sdist"]
    if not files:
        raise RuntimeError(f"{package} {version} has no sdist on PyPI")
    archive = dest / files[0]["filename"]
    if not archive.exists():
        part = archive.with_suffix(".part")
        with (
            urllib.request.urlopen(urljoin(index, files[0]["url"]), timeout=900) as resp,  # noqa: S310 (PyPI's)
            open(part, "wb") as out,
        ):
            shutil.copyfileobj(resp, out)
        part.rename(archive)
    top = dest / archive.name.removesuffix(".tar.gz")
    if not top.is_dir():
        with tarfile.open(archive) as tar:
            tar.extractall(dest, filter="data")
    return top


def include_dirs(task: KernelTask) -> list[str]:
    """The task repo's include folders, repo-relative: its root, then each further include root."""
    extra = [os.path.relpath(r, task.include_root) for r in task.include_roots]
    bad = [r for r in extra if r.startswith("..") or os.path.isabs(r)]
    if bad:
        raise ValueError(f"{task.name}: include_roots {bad} are not inside include_root {task.include_root}")
    return [".", *extra]


def _closure(src: Path, start: str, roots: list[str] | None = None) -> set[str]:
    """`start` and every file under `src` it includes, transitively (relative to the includer, then each
    of `roots`, folders under `src`; default: `src` itself)."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        rel = todo.pop()
        if rel in seen:
            continue
        seen.add(rel)
        text = (src / rel).read_text(encoding="utf-8", errors="replace")
        for header in _INCLUDE.findall(text):
            for base in (Path(rel).parent, *map(Path, roots or ["."])):
                cand = os.path.normpath(base / header)
                if not cand.startswith("..") and (src / cand).is_file():
                    todo.append(cand)
                    break
    return seen


def materialize(task: KernelTask, sdist: Path | None, dest: Path) -> Path:
    """A fresh git repo at `dest`: the kernel's include closure, .clang-format, and the task's unit
    (only the unit for an `own` task, which has no sdist)."""
    if dest.exists():
        shutil.rmtree(dest)
    if sdist is None:
        dest.mkdir(parents=True)
        (dest / UNIT).write_text(task.unit or "")
        gitops.snapshot(dest, f"rocport's own eval kernel {task.name}")
        return dest
    src = sdist / task.include_root
    kernel = os.path.relpath(sdist / task.path, src)
    roots = include_dirs(task)
    wanted = _closure(src, kernel, roots)
    for header in _INCLUDE.findall(task.unit or ""):  # what our own unit includes besides the kernel
        found = next(
            (os.path.normpath(Path(r) / header) for r in roots if (src / r / header).is_file()), None
        )
        if found:
            wanted |= _closure(src, found, roots)
    for rel in sorted(wanted):
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src / rel, dest / rel)
    if (sdist / ".clang-format").is_file():
        shutil.copy2(sdist / ".clang-format", dest / ".clang-format")
    if task.unit:
        (dest / UNIT).write_text(task.unit)
    gitops.snapshot(dest, f"{task.package} {task.version}: {task.path}")
    return dest


def unit_of(task: KernelTask) -> str:
    """The translation unit compiled for the task (our unit, else the kernel itself)."""
    if task.unit or task.package == OWN:
        return UNIT
    return os.path.relpath(task.path, task.include_root)
