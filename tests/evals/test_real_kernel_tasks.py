"""The real-kernel eval's task files parse, keep dev and test apart by source, and lay a kernel out as a repo."""

from __future__ import annotations

import subprocess
from pathlib import Path

from evals.real_kernels.sources import OWN, UNIT, KernelTask, load_tasks, materialize, unit_of


def test_every_task_file_parses_and_names_a_pinned_kernel():
    tasks = {split: load_tasks(split) for split in ("dev", "test")}
    names = [t.name for ts in tasks.values() for t in ts]
    assert len(names) == len(set(names))
    for t in tasks["dev"] + tasks["test"]:
        if t.package == OWN:
            assert t.unit and ("__global__" in t.unit or "__device__" in t.unit), t.name
            continue
        assert t.version[0].isdigit() and not set("<>=~*, ") & set(t.version), t.name  # one exact release
        assert Path(t.path).suffix in (".cu", ".cuh", ".h"), t.name
        assert Path(t.path).is_relative_to(t.include_root), t.name
        if t.unit:  # our instantiating unit must include the kernel it scores
            assert f'"{Path(t.path).name}"' in t.unit or f'/{Path(t.path).name}"' in t.unit, t.name


def test_dev_and_test_share_no_source_package():
    """Rules are tuned on dev only: a test package seen in dev would not be held out."""
    dev = {t.package for t in load_tasks("dev")}
    test = {t.package for t in load_tasks("test")}
    assert not dev & test
    assert OWN not in test
    assert len(test) >= 3  # flashinfer and the second held-out group (flash-attn, optimum-quanto)


def test_materialize_copies_the_include_closure_and_the_unit(tmp_path):
    sdist = tmp_path / "pkg-1.0"
    src = sdist / "csrc" / "ops"
    src.mkdir(parents=True)
    (sdist / "csrc" / "common.h").write_text("#pragma once\n#include <cstdint>\n")
    (src / "helper.cuh").write_text('#pragma once\n#include "common.h"\n')
    (src / "kernel.cuh").write_text('#include "helper.cuh"\n__device__ int f() { return 1; }\n')
    (src / "unrelated.cuh").write_text("__device__ int g();\n")
    (sdist / ".clang-format").write_text("BasedOnStyle: Google\n")
    task = KernelTask(
        name="pkg_kernel",
        package="pkg",
        version="1.0",
        path="csrc/ops/kernel.cuh",
        include_root="csrc",
        unit='#include "ops/kernel.cuh"\n',
    )
    repo = materialize(task, sdist, tmp_path / "repo")
    files = sorted(str(p.relative_to(repo)) for p in repo.rglob("*") if p.is_file() and ".git" not in p.parts)
    assert files == [".clang-format", "common.h", "ops/helper.cuh", "ops/kernel.cuh", UNIT]
    assert unit_of(task) == UNIT
    log = subprocess.run(["git", "log", "--format=%s"], cwd=repo, capture_output=True, text=True, check=True)
    assert log.stdout.strip() == "pkg 1.0: csrc/ops/kernel.cuh"
