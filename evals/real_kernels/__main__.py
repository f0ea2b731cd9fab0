"""`python -m evals.real_kernels [--split dev|test] [--only NAME]`: run `rocport fix` on real kernels, print scores.

Downloads each task's sdist from PyPI into ~/.cache/rocport-evals (once), lays every kernel out as a
small git repo there, fixes it, and prints one row per kernel plus the totals; `--json PATH` writes them.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from evals.real_kernels.score import score
from evals.real_kernels.sources import CACHE, OWN, fetch_sdist, include_dirs, load_tasks, materialize, unit_of

COLUMNS = ("hip_before", "hip_after", "nvcc_after", "cuda_identical", "idempotent", "formatted")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m evals.real_kernels", description=__doc__)
    ap.add_argument("--split", default="dev", choices=("dev", "test", "all"))
    ap.add_argument("--only", action="append", default=[], help="task name (repeatable)")
    ap.add_argument("--image", default="rocport/rocm-build:6.4")
    ap.add_argument("--arch", default="gfx942")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    splits = ("dev", "test") if args.split == "all" else (args.split,)
    tasks = [(sp, t) for sp in splits for t in load_tasks(sp) if not args.only or t.name in args.only]
    work = CACHE / "real-kernels"
    logs = work / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    rows = []
    for split, task in tasks:
        sdist = None if task.package == OWN else fetch_sdist(task.package, task.version)
        repo = materialize(task, sdist, work / "repos" / task.name)
        s = score(task.name, repo, unit_of(task), args.image, args.arch, logs, tuple(include_dirs(task)))
        rows.append({"split": split, **s.to_dict()})
        marks = " ".join(f"{c}={'Y' if getattr(s, c) else 'n'}" for c in COLUMNS)
        print(f"{split:4} {task.name:28} {marks} commits={s.commits} {s.first_error[:100]}", flush=True)
    for split in splits:
        mine = [r for r in rows if r["split"] == split]
        if mine:
            totals = " ".join(f"{c}={sum(r[c] for r in mine)}" for c in COLUMNS)
            print(f"{split}: {len(mine)} kernels: {totals}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    print(f"logs and repos under {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
