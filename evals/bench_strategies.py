"""Rules against the naive baseline on the eval suite: counts, wall and CPU time, and where the time went.

    python3 evals/bench_strategies.py [TASK ...] [--model-build-minutes 30] [--output bench.json]

Each task is ported under every strategy back to back (the order alternates from task to task), so a
shared machine's load falls on both alike. Prints, per strategy: resolved, full builds, unit compiles,
compile-cache hits, load checks, launches, LLM tokens, wall time, and CPU time (this process and its
children on the host, plus the run containers' own cgroup CPU); then the wall seconds per phase (build,
unit compile, load check, launch, bench, git, ...) from the runs' `timing` events; then a MODEL: the
projected wall time if each full build of the framework took --model-build-minutes (the measured build
seconds replaced by builds x that; nothing sleeps). Each strategy's runs share one compile cache that
starts empty, as a user's runs on one machine do (agent.loop.compilers.shared_cache_dir), and one for
the eval's CUDA scoring builds, as `rocport eval` gives each strategy; both strategies' scoring builds
start from the CUDA build of the task's starting tree, made once before either port and printed apart
(in neither strategy's wall time; as `rocport eval -s rules -s naive` does). With --cold-cache every run
starts from empty caches and there is no shared starting-tree build.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent.loop.rundir import RunDir, rocport_home
from evals.runner import TaskRun, run_task
from evals.scoring import baselines, scoring_cache
from evals.taskdefs import load_task, task_names

PHASES = (
    "build",
    "unit compile",
    "load check",
    "launch",
    "bench",
    "git",
    "apply",
    "propose",
    "scan",
    "preflight",
    "report",
)
COUNTS = ("builds", "unit_compiles", "cache_hits", "load_checks", "launches", "llm_tokens")


def _cpu_s() -> float:
    """CPU seconds of this process and its reaped children (host side: nvcc, git, the load generator)."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def run_facts(run: TaskRun) -> dict:
    """Phase seconds, container CPU, load checks and cache hits of one run, from its events."""
    facts: dict = {
        "phases": defaultdict(float),
        "container_cpu_s": 0.0,
        "cache_hits": 0,
        "load_checks": 0,
        "port_s": 0.0,
    }
    if not run.run_id:
        return facts
    rundir = RunDir(run.run_id)
    events = [json.loads(line) for line in rundir.events.read_text().splitlines()]
    facts["port_s"] = port_seconds(events)
    for event in events:
        if event["event"] == "timing":
            for phase, seconds in event["seconds"].items():
                facts["phases"][phase] += seconds
        elif event["event"] == "sandbox_cpu":
            facts["container_cpu_s"] += event["seconds"]
        elif event["event"] == "compile_cache":
            facts["cache_hits"] += event.get("compile_cache_hits", 0)
    state = json.loads((rundir.path / "state.json").read_text())
    facts["load_checks"] = state.get("counters", {}).get("load_checks", 0)
    return facts


def port_seconds(events: list[dict]) -> float:
    """The port itself, its first event to its last: the eval's task set-up and CUDA scoring build are not in it."""
    return events[-1]["ts"] - events[0]["ts"] if events else 0.0


def measure(
    task_names_: list[str], strategies: list[str], workroot: Path, ledger: Path, cold: bool = False
) -> list[dict]:
    """Every task under every strategy, one at a time, alternating which strategy goes first; each row
    is appended to `ledger` (JSON lines) as it finishes, so a stopped benchmark still has its pairs.
    Each strategy's runs share a compile cache of their own that starts empty (as on a machine rocport
    has not built this image's framework on yet), and so do its CUDA scoring builds (evals.scoring.Scoring),
    over the starting tree's CUDA build, made first (evals.scoring.Baselines); `cold`: every run starts from
    empty ones."""
    rows = []
    base = baselines(workroot)
    for i, name in enumerate(task_names_):
        task = load_task(name)
        order = strategies if i % 2 == 0 else list(reversed(strategies))
        if not cold and "cuda_build" in task.success:
            base.build(task, workroot)
            print(f"{name}: CUDA build of the starting tree (shared) {base.seconds[name]:.0f}s", flush=True)
        for strategy in order:
            cache = f"{strategy}-{name}" if cold else strategy
            os.environ["ROCPORT_SHARED_COMPILE_CACHE"] = str(workroot / "compile-cache" / cache)
            cpu0 = _cpu_s()
            scoring = scoring_cache(workroot, cache, over_baseline=not cold)
            run = run_task(task, strategy, workroot, scoring=scoring)
            facts = run_facts(run)
            rows.append(
                {
                    **run.to_dict(),
                    **facts,
                    "host_cpu_s": _cpu_s() - cpu0,
                    "baseline_s": base.seconds.get(name, 0.0),
                }
            )
            with ledger.open("a") as fh:
                fh.write(json.dumps(rows[-1], default=float) + "\n")
            print(
                f"{name} ({strategy}): {'resolved' if run.resolved else 'NOT resolved'}, builds {run.builds}, "
                f"unit compiles {run.unit_compiles}, launches {run.launches}, {run.wall_s:.0f}s",
                flush=True,
            )
    return rows


def paired(rows: list[dict]) -> list[dict]:
    """The rows of tasks every strategy finished (a stopped benchmark's last task may have one)."""
    strategies = {r["strategy"] for r in rows}
    done = {
        t for t in {r["task"] for r in rows} if {r["strategy"] for r in rows if r["task"] == t} == strategies
    }
    return [r for r in rows if r["task"] in done]


def totals(rows: list[dict]) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for r in rows:
        t = out.setdefault(r["strategy"], defaultdict(float))
        t["tasks"] += 1
        t["resolved"] += int(r["resolved"])
        for key in (*COUNTS, "wall_s", "port_s", "host_cpu_s", "container_cpu_s"):
            t[key] += r.get(key) or 0
        for phase, seconds in r["phases"].items():
            t[f"phase:{phase}"] += seconds
    return out


def baseline_seconds(rows: list[dict]) -> float:
    """The starting trees' CUDA builds: once per task, shared by the strategies, in neither's wall time."""
    return sum({r["task"]: r.get("baseline_s", 0.0) for r in rows}.values())


def projected_wall(t: dict, build_minutes: float) -> float:
    """MODEL: the wall time had each full build taken `build_minutes` (measured build time swapped out)."""
    return t["wall_s"] - t.get("phase:build", 0.0) + t["builds"] * build_minutes * 60


def render(tot: dict[str, dict], build_minutes: float) -> str:
    """The side-by-side table (markdown): counts, wall and CPU time, phases, the 30-minute-build MODEL."""
    names = list(tot)
    lines = ["| | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]

    def row(label: str, fmt) -> None:
        lines.append(f"| {label} | " + " | ".join(fmt(tot[n]) for n in names) + " |")

    row("resolved", lambda t: f"{int(t['resolved'])}/{int(t['tasks'])}")
    for key in COUNTS:
        row(key.replace("_", " "), lambda t, k=key: f"{int(t[k])}")
    row("wall s", lambda t: f"{t['wall_s']:.0f}")
    row("  the port itself s (`rocport port`, first event to last)", lambda t: f"{t['port_s']:.0f}")
    row("  the eval's own s (task set-up, CUDA scoring build)", lambda t: f"{t['wall_s'] - t['port_s']:.0f}")
    row("CPU s (host + containers)", lambda t: f"{t['host_cpu_s'] + t['container_cpu_s']:.0f}")
    for phase in PHASES:
        row(f"  {phase} s", lambda t, p=phase: f"{t.get(f'phase:{p}', 0.0):.0f}")

    def ported(t):
        return sum(v for k, v in t.items() if k.startswith("phase:"))

    row(
        "  other s in the port (container start and stop, the loop's own)",
        lambda t: f"{t['port_s'] - ported(t):.0f}",
    )
    row(
        f"MODEL: projected wall h, {build_minutes:g}-min full builds",
        lambda t: f"{projected_wall(t, build_minutes) / 3600:.1f}",
    )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tasks", nargs="*", help="task names (default: every task in evals/tasks)")
    parser.add_argument("--strategy", "-s", action="append", help="default: rules and naive")
    parser.add_argument(
        "--model-build-minutes",
        type=float,
        default=30.0,
        help="MODEL: a framework whose full build takes this long (projected, nothing sleeps)",
    )
    parser.add_argument("--output", type=Path, help="write the rows and totals as JSON here")
    parser.add_argument(
        "--cold-cache",
        action="store_true",
        help="every run starts from an empty compile cache (none reuses what an earlier task compiled)",
    )
    parser.add_argument(
        "--rows", type=Path, help="only print the tables of a ledger an earlier run wrote (rows.jsonl)"
    )
    args = parser.parse_args()
    if args.rows:
        rows = [json.loads(line) for line in args.rows.read_text().splitlines() if line.strip()]
        for r in rows:  # a ledger written before port_s was kept: read it from the run's events
            events = RunDir(r["run_id"]).events if r.get("run_id") and "port_s" not in r else None
            if events is not None and events.exists():
                r["port_s"] = port_seconds([json.loads(x) for x in events.read_text().splitlines()])
        print(render(totals(paired(rows)), args.model_build_minutes))
        print(f"CUDA builds of the starting trees (shared, in neither column): {baseline_seconds(rows):.0f}s")
        return 0
    strategies = args.strategy or ["rules", "naive"]
    names = args.tasks or task_names()
    workroot = rocport_home() / "bench-strategies" / time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    workroot.mkdir(parents=True, exist_ok=True)
    print(f"rows go to {workroot / 'rows.jsonl'} as they finish", flush=True)
    started = time.monotonic()
    rows = measure(names, strategies, workroot, workroot / "rows.jsonl", args.cold_cache)
    tot = totals(rows)
    print(f"\n{len(names)} task(s) x {len(strategies)} strategies in {time.monotonic() - started:.0f}s")
    print(render(tot, args.model_build_minutes))
    print(f"CUDA builds of the starting trees (shared, in neither column): {baseline_seconds(rows):.0f}s")
    if args.output:
        args.output.write_text(json.dumps({"rows": rows, "totals": tot}, indent=1, default=float))
    return 0


if __name__ == "__main__":
    sys.exit(main())
