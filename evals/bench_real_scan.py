"""`rocport scan` on real framework trees: findings per ROCm-build group, precision and recall
against labels kept in the repo, and wall time against grep of the same patterns.

vLLM: the pinned sdist is downloaded from PyPI at run time into ~/.cache/rocport-evals (never into
the repo) and its csrc/ is scanned with the vllm profile, whose CMake HIP source lists split the
findings into "compiled for ROCm" and "not in the ROCm build". sglang: sgl-kernel has no sdist on
PyPI, so pass a checkout with --sglang PATH (its setup_rocm.py splits the findings).

Labels (evals/labels/scan_real/<split>/<source>.json, split once by source: dev = vLLM,
test = sglang): `findings` are reported findings judged by reading the code (file, line, symbol,
verdict tp/fp, why); `true_positives` are real ROCm blockers found by reading the tree
independently of the scanner (grep for the constructs, then the code around each).

    python3 -m evals.bench_real_scan [--repeat 3] [--sglang PATH] [--cache DIR]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import tarfile
import urllib.parse
import urllib.request
from pathlib import Path

from evals.bench_scan import best_of, run_grep
from tools.records import Failure
from tools.scan import scan_report

VLLM_VERSION = "0.34.0"
VLLM_SHA256 = "fcad848b246a9d8652b47e6425af92334dc02492f9802720f54e27b823cf0113"
PYPI_JSON = "https://pypi.org/pypi/{name}/json"
LABELS = Path(__file__).parent / "labels" / "scan_real"


def fetch_vllm(cache: Path) -> Path:
    """The pinned vLLM sdist, unpacked under `cache` (downloaded once, checked against its sha256).
    The URL comes from PyPI's JSON API: `pip download --no-binary` would build vLLM's metadata,
    which needs torch and CUDA."""
    tree = cache / f"vllm-{VLLM_VERSION}"
    if (tree / "csrc").is_dir():
        return tree
    cache.mkdir(parents=True, exist_ok=True)
    archive = cache / f"vllm-{VLLM_VERSION}.tar.gz"
    if not archive.is_file():
        index_url = PYPI_JSON.format(name="vllm")
        with urllib.request.urlopen(index_url, timeout=60) as resp:
            index = json.load(resp)
        sdists = [u for u in index["releases"].get(VLLM_VERSION, index["urls"]) if u["packagetype"] == "sdist"]
        if not sdists:
            raise SystemExit(f"bench_real_scan: PyPI lists no sdist for vllm {VLLM_VERSION}")
        urllib.request.urlretrieve(urllib.parse.urljoin(index_url, sdists[0]["url"]), archive)
    if hashlib.sha256(archive.read_bytes()).hexdigest() != VLLM_SHA256:
        archive.unlink()
        raise SystemExit(f"bench_real_scan: vllm-{VLLM_VERSION}.tar.gz does not match its pinned sha256")
    with tarfile.open(archive) as tar:
        tar.extractall(cache, filter="data")
    return tree


def _reported(findings: list[Failure], file: str, line: int, symbol: str | None = None) -> bool:
    for f in findings:
        if f.file != file or (symbol is not None and f.symbol != symbol):
            continue
        if f.line == line or line in f.facts.get("lines", ()):
            return True
    return False


def score(findings: list[Failure], labels: dict) -> tuple[str, str]:
    """Precision over labelled reported findings, recall over labelled true positives."""
    judged = [item for item in labels.get("findings", [])
              if _reported(findings, item["file"], item["line"], item["symbol"])]
    tp = sum(item["verdict"] == "tp" for item in judged)
    stale = len(labels.get("findings", [])) - len(judged)
    precision = f"{tp}/{len(judged)} = {tp / len(judged):.0%}" if judged else "n/a"
    precision += f" ({stale} labelled finding(s) no longer reported)" if stale else ""
    truths = labels.get("true_positives", [])
    found = [t for t in truths if _reported(findings, t["file"], t["line"])]
    missed = [f"{t['file']}:{t['line']}" for t in truths if t not in found]
    recall = f"{len(found)}/{len(truths)} = {len(found) / len(truths):.0%}" if truths else "n/a"
    return precision, recall + (f"; missed {', '.join(missed)}" if missed else "")


def evaluate(name: str, root: Path, profile: str, labels_path: Path, repeat: int) -> None:
    """Scan, time against grep, print the groups and the scores for one tree."""
    run_grep(root)  # warm the page cache for both sides
    scan_report(root, profile=profile)  # and import what the scan imports (pydantic, the profile)
    grep_s, grep_lines, grep_cpu = best_of(repeat, lambda: run_grep(root))
    scan_s, report, scan_cpu = best_of(repeat, lambda: scan_report(root, profile=profile))
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
    print(f"wall: scan {scan_s:.2f} s, grep -rE {grep_s:.2f} s ({grep_lines} lines), "
          f"ratio {scan_s / grep_s:.2f}x grep (best of {repeat}); cpu: scan {scan_cpu:.2f} s, grep "
          f"{grep_cpu:.2f} s, ratio {scan_cpu / max(grep_cpu, 1e-3):.2f}x; load average {os.getloadavg()[0]:.1f}")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "rocport-evals")
    ap.add_argument("--sglang", type=Path, help="an sglang checkout (sgl-kernel/ inside); skipped without one")
    args = ap.parse_args(argv)
    vllm = fetch_vllm(args.cache)
    evaluate(f"vLLM {VLLM_VERSION} csrc (dev)", vllm / "csrc", "vllm", LABELS / "dev" / "vllm.json", args.repeat)
    if args.sglang is None:
        print("== sglang sgl-kernel (test): not run; sgl-kernel has no PyPI sdist: pass --sglang CHECKOUT")
    else:
        evaluate("sglang sgl-kernel (test)", args.sglang / "sgl-kernel", "sglang",
                 LABELS / "test" / "sglang.json", args.repeat)


if __name__ == "__main__":
    main()
