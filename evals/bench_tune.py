"""`rocport tune` on the fixture: the coordinate search next to the exhaustive grid, then the chosen
launch command relaunched as printed, with the same load, and its throughput next to the search's.

    python3 evals/bench_tune.py [--keep DIR]

Real tinyserve servers on this machine (data-parallel worker processes, both MoE kernels), the real
benchmark; prints launches, wall time, the chosen configuration, the Pareto table and the rerun.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent.rundir import RunDir
from agent.tune.render import comparison_lines, trial_table
from agent.tune.run import load_run, tune_run
from evals.tune_fixture import make_fixture_run, relaunch


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="ROCPORT_HOME to use (and keep); default a temporary one")
    args = parser.parse_args()
    home = args.keep or Path(tempfile.mkdtemp(prefix="bench-tune-"))
    home.mkdir(parents=True, exist_ok=True)
    os.environ["ROCPORT_HOME"] = str(home)
    os.environ["PATH"] = f"{Path(sys.executable).parent}:{os.environ['PATH']}"  # a python3 with numpy
    run_id = make_fixture_run(home, Path(tempfile.mkdtemp(prefix="work-", dir=home)))
    _, job, _, _ = load_run(run_id, home)
    t0 = time.monotonic()
    outcome = tune_run(run_id, job.tune, exhaustive=True, home=home,
                       on_trial=lambda s, t: print(f"  [{s}] {t.key}: {t.status} {t.output_tok_s or t.probe_tok_s}",
                                                   flush=True))
    print(f"\ntune + exhaustive + rerun: {time.monotonic() - t0:.0f} s\n")
    print("\n".join(comparison_lines(outcome) + [""] + trial_table(outcome, outcome.search)))
    best = outcome.best
    again = relaunch(outcome, RunDir(run_id, home).path / "repo")
    print(f"\nchosen: {outcome.chosen_command}")
    print(f"search: {best.output_tok_s:.1f} out tok/s (repeats {best.repeats}); relaunched as printed: "
          f"{again.output_tok_s:.1f} (repeats {again.repeats}); {again.output_tok_s / best.output_tok_s - 1:+.1%}")
    print(f"same best as exhaustive: {outcome.search.best == outcome.exhaustive.best}; launches "
          f"{outcome.search.launches} of {outcome.exhaustive.launches} "
          f"({outcome.search.launches / outcome.exhaustive.launches:.0%})")
    print(f"results: {RunDir(run_id, home).path / 'tune'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
