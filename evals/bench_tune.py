"""`rocport tune` on the fixture: a CPU-only port of tinyserve continuing into the tune (coordinate
search and exhaustive grid), then the chosen launch command relaunched as printed, with the same
load, and its throughput next to the search's.

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

from agent.config import load_job
from agent.loop.port import start_port
from agent.loop.rundir import RunDir
from evals.tune_fixture import fixture_job, python3_path, relaunch
from tools.tune.render import comparison_lines, trial_table
from tools.tune.results import OUTCOME_FILE, TUNE_DIR, load_outcome


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="ROCPORT_HOME to use (and keep); default a temporary one")
    args = parser.parse_args()
    home = args.keep or Path(tempfile.mkdtemp(prefix="bench-tune-"))
    home.mkdir(parents=True, exist_ok=True)
    os.environ["ROCPORT_HOME"] = str(home)
    os.environ["PATH"] = python3_path()
    job = fixture_job(Path(tempfile.mkdtemp(prefix="work-", dir=home)), {"exhaustive": True})
    t0 = time.monotonic()
    result = start_port(load_job([str(job)]))
    run_id = result.run_id
    outcome = load_outcome(RunDir(run_id, home).path / TUNE_DIR / OUTCOME_FILE)
    if outcome is None:
        print(f"the port ended {result.status} ({result.reason}) without a tune", file=sys.stderr)
        return 1
    print(f"port + tune + exhaustive + rerun: {time.monotonic() - t0:.0f} s\n")
    print("\n".join([*comparison_lines(outcome), "", *trial_table(outcome, outcome.search)]))
    best, searched, exhaustive = outcome.best, outcome.search, outcome.exhaustive
    if best is None or searched is None or exhaustive is None:
        print("the tune kept no best trial, or ran no exhaustive search to compare with", file=sys.stderr)
        return 1
    again = relaunch(outcome, RunDir(run_id, home).path / "repo")
    print(f"\nchosen: {outcome.chosen_command}")
    print(
        f"search: {best.output_tok_s:.1f} out tok/s (repeats {best.repeats}); relaunched as printed: "
        f"{again.output_tok_s:.1f} (repeats {again.repeats}); {again.output_tok_s / best.output_tok_s - 1:+.1%}"
    )
    print(
        f"same best as exhaustive: {searched.best == exhaustive.best}; launches "
        f"{searched.launches} of {exhaustive.launches} ({searched.launches / exhaustive.launches:.0%})"
    )
    print(f"results: {RunDir(run_id, home).path / 'tune'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
