"""`rocport scan` on real framework trees: findings per ROCm-build group, precision and recall
against labels kept in the repo, and wall time against grep of the same patterns.

vLLM: the pinned sdist is downloaded from PyPI at run time into ~/.cache/rocport-evals (never into
the repo) and its csrc/ is scanned with the vllm profile, whose CMake HIP source lists split the
findings into "compiled for ROCm" and "not in the ROCm build". sglang: sgl-kernel has no sdist on
PyPI, so the pinned commit's source archive is downloaded from GitHub (only sgl-kernel/ is unpacked,
checked against a digest of its files), or pass a checkout with --sglang PATH; its setup_rocm.py
splits the findings.

Labels (evals/labels/scan_real/<split>/<source>.json, split once by source: dev = vLLM,
test = sglang): `findings` are reported findings judged by reading the code (file, line, symbol,
verdict tp/fp, why); `true_positives` are real ROCm blockers found by reading the tree
independently of the scanner (grep for the constructs, then the code around each).

Times: grep is a process, with the round-one pattern in this locale (as since round one) and with
the pattern built from the scan's own tables in the C locale, its fastest (evals/grep_patterns.py).
The scan is timed in-process after a warm-up scan (its `#if` memo warm), in one process (the default
for a tree this size) and with -j 2, then as a whole `rocport scan --no-cache` process (interpreter
start-up, imports, a cold memo; Python's bytecode cache in place, as an installed rocport has it, and
the bundled profile's parse memo and the compiled-pattern memo filled, as after a first run), again
with -j 2, on an empty directory (what is left is start-up and imports), without either memo (a cache
directory that cannot be made: a first run, or a read-only cache), and with this environment's
PYTHONDONTWRITEBYTECODE when set (bytecode only where .ci/setup wrote it). With -j 2 the tree is
shared with a forked copy: CPU counts the copy's, and wall time depends on a free core. Last, the
default process and the full grep alternate run after run: their ratio from the same moments, min
and median.

    python3 -m evals.bench_real_scan [--repeat 3] [--sglang PATH | --no-sglang] [--python] [--cache DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
from collections import Counter
from functools import partial
from pathlib import Path

from agent.profiles import load_profile
from evals.bench_scan import alternated, best_of, bytecode_cached_env, run_cli, run_grep
from evals.grep_patterns import ROUND_ONE, scan_pattern, unmatched
from evals.real_trees import SGLANG_COMMIT, VLLM_VERSION, fetch_sglang, fetch_vllm
from tools.records import Failure
from tools.scan import scan_report

LABELS = Path(__file__).parent / "labels" / "scan_real"


def _reported(findings: list[Failure], file: str, line: int, symbol: str | None = None) -> bool:
    for f in findings:
        if f.file != file or (symbol is not None and f.symbol != symbol):
            continue
        if f.line == line or line in f.facts.get("lines", ()):
            return True
    return False


def score(findings: list[Failure], labels: dict) -> tuple[str, str]:
    """Precision over labelled reported findings, recall over labelled true positives."""
    judged = [
        item
        for item in labels.get("findings", [])
        if _reported(findings, item["file"], item["line"], item["symbol"])
    ]
    tp = sum(item["verdict"] == "tp" for item in judged)
    stale = [item for item in labels.get("findings", []) if item not in judged]
    precision = f"{tp}/{len(judged)} = {tp / len(judged):.0%}" if judged else "n/a"
    if stale:  # a dropped false one is a precision gain; a dropped true one is a blocker lost
        lost = [f"{x['file']}:{x['line']} {x['symbol']}" for x in stale if x["verdict"] == "tp"]
        precision += (
            f" ({len(stale)} labelled finding(s) no longer reported: {len(stale) - len(lost)} false, "
            f"{len(lost)} true{': ' + ', '.join(lost) if lost else ''})"
        )
    truths = labels.get("true_positives", [])
    found = [t for t in truths if _reported(findings, t["file"], t["line"])]
    missed = [f"{t['file']}:{t['line']}" for t in truths if t not in found]
    recall = f"{len(found)}/{len(truths)} = {len(found) / len(truths):.0%}" if truths else "n/a"
    return precision, recall + (f"; missed {', '.join(missed)}" if missed else "")


def evaluate(name: str, root: Path, profile_name: str, labels_path: Path, repeat: int) -> None:
    """Scan, time against grep, print the groups and the scores for one tree."""
    run_grep(root)  # warm the page cache for both sides
    profile = load_profile(profile_name)  # loaded once, as `rocport scan --profile` does
    scan_report(root, profile=profile)  # and import what the scan imports (pydantic)
    grep_s, grep_lines, grep_cpu = best_of(repeat, lambda: run_grep(root))
    full = scan_pattern()
    full_s, full_lines, _ = best_of(repeat, lambda: run_grep(root, full, c_locale=True))
    scan_s, report, scan_cpu = best_of(repeat, lambda: scan_report(root, profile=profile))
    two_s, _, two_cpu = best_of(repeat, lambda: scan_report(root, profile=profile, jobs=2))
    with tempfile.TemporaryDirectory() as cache:  # what `rocport scan` does by default
        scan_report(root, profile=profile, cache_dir=Path(cache))
        warm_s, _, warm_cpu = best_of(
            repeat, lambda: scan_report(root, profile=profile, cache_dir=Path(cache))
        )
        processes, (process_walls, grep_walls) = _time_processes(root, profile_name, Path(cache), repeat)
    timings = [
        ("fresh, in-process (after a warm-up scan)", scan_s, scan_cpu),
        ("  the same with -j 2 (with a forked copy)", two_s, two_cpu),
        ("cached (files unchanged), in-process", warm_s, warm_cpu),
        *processes,
    ]
    print(f"== {name}: {root}")
    print(f"ROCm source list: {report.build}")
    print(f"compiled for ROCm: {len(report.findings)} finding(s)")
    for f in report.findings:
        print(f"  {f.file}:{f.line} {f.kind} {f.symbol}")
    print(f"not in the ROCm build: {len(report.not_built)} file(s), {len(report.outside_build)} finding(s)")
    for entry in report.not_built[:15]:
        print(f"  {entry.path}: {entry.summary()[:140]}")
    print(f"ROCm-only files (no findings by design): {report.rocm_only}")
    labels = json.loads(labels_path.read_text()) if labels_path.is_file() else {}
    precision, recall = score(report.findings + report.outside_build, labels)
    print(f"labels {labels_path.relative_to(LABELS.parent.parent)}: precision {precision}; recall {recall}")
    reported = [(f.file or "", f.line or 0) for f in report.findings + report.outside_build]
    print(
        f"grep -rE, round-one pattern: wall {grep_s:.3f} s, cpu {grep_cpu:.3f} s ({grep_lines} lines; "
        f"misses {len(unmatched(root, reported, ROUND_ONE))} of the {len(reported)} lines the scan reports)"
    )
    print(
        f"grep -rE, the scan's own pattern, LC_ALL=C: wall {full_s:.3f} s ({full_lines} lines; "
        f"misses {len(unmatched(root, reported, full))}); best of {repeat}"
    )
    for what, wall, cpu in timings:
        print(
            f"scan {what}: wall {wall:.3f} s = {wall / grep_s:.2f}x grep, {wall / full_s:.2f}x the full grep; "
            f"cpu {cpu:.3f} s = {cpu / max(grep_cpu, 1e-3):.2f}x grep"
        )
    low = min(process_walls) / min(grep_walls)
    typical = statistics.median(process_walls) / statistics.median(grep_walls)
    print(
        f"the default `rocport scan --no-cache` process and the full grep, alternated {len(grep_walls)} times: "
        f"min {min(process_walls):.3f} / {min(grep_walls):.3f} s = {low:.2f}x, "
        f"median {statistics.median(process_walls):.3f} / {statistics.median(grep_walls):.3f} s = {typical:.2f}x"
    )
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


def _time_processes(
    root: Path, profile_name: str, tmp: Path, repeat: int
) -> tuple[list[tuple[str, float, float]], tuple[list[float], list[float]]]:
    """The whole command as a user runs it: a new interpreter, imports, a cold #if memo, no result
    cache; against grep's own process. CPU counts the scan's forked copies. Python's bytecode cache
    is kept in `tmp` and filled by one untimed run first (an installed rocport has one)."""
    out, empty = tmp / "scan.json", tmp / "empty"  # empty: the same command with nothing to scan
    empty.mkdir()
    # The bundled profile's parse memo (agent/profile_shape.py) is kept under the bench's own cache
    # directory, filled by the untimed run like the bytecode; a cache directory below a plain file
    # can be neither read nor written: the profile is parsed with PyYAML each time, as on a first run.
    env = {**bytecode_cached_env(tmp / "pycache"), "ROCPORT_CACHE_DIR": str(tmp / "rocport-cache")}
    (tmp / "not-a-directory").touch()
    no_memo = {**env, "ROCPORT_CACHE_DIR": str(tmp / "not-a-directory" / "cache")}
    args = ("--profile", profile_name, "--no-cache")
    run_cli(root, out, None, *args, env=env)
    rows: list[tuple[str, int | None, Path, dict[str, str] | None]] = [
        ("fresh, `rocport scan --no-cache` process (default: a forked copy per idle core)", None, root, env),
        ("  the same with -j 1 (one process)", 1, root, env),
        ("  the same with -j 2 (with a forked copy)", 2, root, env),
        ("  the same on an empty directory (start-up, imports)", None, empty, env),
        (
            "  the same without the profile's parse memo and the pattern memo (PyYAML imported, as a first run)",
            None,
            root,
            no_memo,
        ),
    ]
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        bare = {k: v for k, v in env.items() if k != "PYTHONPYCACHEPREFIX"}
        bare["PYTHONDONTWRITEBYTECODE"] = os.environ["PYTHONDONTWRITEBYTECODE"]
        rows.append(
            (
                "  the same with PYTHONDONTWRITEBYTECODE set, as here (bytecode only where setup wrote it)",
                None,
                root,
                bare,
            )
        )
    timed = []
    for what, jobs, tree, environment in rows:
        wall, _, cpu = best_of(repeat, partial(run_cli, tree, out, jobs, *args, env=environment))
        timed.append((what, wall, cpu))
    # what `rocport scan` prints by default, read through a pipe (no JSON written, json not imported)
    wall, _, cpu = best_of(repeat, partial(run_cli, root, out, None, *args, env=env, table=True))
    timed.append(("  the same with the default report (table, piped: one line per finding)", wall, cpu))
    # `rocport scan` as a user reruns it (the default: the result cache on, every file unchanged)
    cached = partial(run_cli, root, out, None, "--profile", profile_name, env=env)
    cached()
    wall, _, cpu = best_of(repeat, cached)
    timed.append(("  a second `rocport scan` (result cache on, as by default; no file changed)", wall, cpu))
    # the default process and the full-pattern grep, run after run
    fresh = partial(run_cli, root, out, None, *args, env=env)
    return timed, alternated(repeat, fresh, partial(run_grep, root, scan_pattern(), c_locale=True))


def evaluate_python(name: str, root: Path, profile: str, labels_path: Path) -> None:
    """A framework's Python tree: findings per kind and precision on the labelled sample."""
    loaded = load_profile(profile)
    wall, report, cpu = best_of(1, lambda: scan_report(root, profile=loaded))
    kinds = Counter(f.kind for f in report.findings)
    print(f"== {name}: {report.files_scanned} files, scan wall {wall:.1f} s, cpu {cpu:.1f} s")
    print(f"findings: {len(report.findings)} ({', '.join(f'{n} {k}' for k, n in kinds.most_common())})")
    labels = json.loads(labels_path.read_text())
    for sample in sorted({x.get("sample", "") for x in labels["findings"]}):
        part = {"findings": [x for x in labels["findings"] if x.get("sample", "") == sample]}
        precision, _ = score(report.findings, part)
        print(f"labels {labels_path.name}{f' sample {sample!r}' if sample else ''}: precision {precision}")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "rocport-evals")
    ap.add_argument(
        "--sglang", type=Path, help="an sglang checkout (sgl-kernel/ inside) instead of the download"
    )
    ap.add_argument("--no-sglang", action="store_true", help="only vLLM (dev)")
    ap.add_argument("--python", action="store_true", help="also scan vLLM's and sglang's Python trees")
    args = ap.parse_args(argv)
    vllm = fetch_vllm(args.cache)
    evaluate(
        f"vLLM {VLLM_VERSION} csrc (dev)", vllm / "csrc", "vllm", LABELS / "dev" / "vllm.json", args.repeat
    )
    if args.python:
        evaluate_python(
            f"vLLM {VLLM_VERSION} vllm/ Python package (dev)",
            vllm / "vllm",
            "vllm",
            LABELS / "dev" / "vllm_python.json",
        )
    if not args.no_sglang:
        sglang = args.sglang or fetch_sglang(args.cache)
        if args.python:
            evaluate_python(
                f"sglang {SGLANG_COMMIT[:7]} python/ (test)",
                sglang / "python",
                "sglang",
                LABELS / "test" / "sglang_python.json",
            )
        evaluate(
            f"sglang {SGLANG_COMMIT[:7]} sgl-kernel (test)",
            sglang / "sgl-kernel",
            "sglang",
            LABELS / "test" / "sglang.json",
            args.repeat,
        )


if __name__ == "__main__":
    main()
