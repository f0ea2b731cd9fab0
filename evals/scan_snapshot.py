"""Every finding of a cold scan of the real trees, written as JSON, and a diff against a stored dump.

A change that only makes the scanner faster must leave this output byte for byte the same:

    python3 -m evals.scan_snapshot dump /tmp/before.json     # on the old code
    python3 -m evals.scan_snapshot check /tmp/before.json    # on the new code: exit 1 on any change

Trees: vLLM's csrc/ and vllm/ package (the pinned sdist, see bench_real_scan), sglang's sgl-kernel/
and python/ (pinned commit), each with its profile and without one, plus the repo's own fixture
framework (evals/frameworks/tinyserve). Nothing is cached between scans.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from agent.profiles import load_profile
from evals.real_trees import fetch_sglang, fetch_vllm
from tools.scan import scan_report

FIXTURE = Path(__file__).parent / "frameworks" / "tinyserve"


def _trees(cache: Path, only: set[str] | None) -> list[tuple[str, Path, str | None]]:
    """The trees to scan; sglang is downloaded only when one of its trees is asked for (`--only`
    vllm-csrc works where GitHub cannot be reached)."""
    vllm = fetch_vllm(cache)
    trees = [
        ("vllm-csrc", vllm / "csrc", "vllm"),
        ("vllm-csrc-noprofile", vllm / "csrc", None),
        ("vllm-python", vllm / "vllm", "vllm"),
    ]
    sglang_trees = [
        ("sgl-kernel", "sgl-kernel", "sglang"),
        ("sgl-kernel-noprofile", "sgl-kernel", None),
        ("sglang-python", "python", "sglang"),
    ]
    if only is None or any(name in only for name, _, _ in sglang_trees):
        sglang = fetch_sglang(cache)
        trees += [(name, sglang / sub, profile) for name, sub, profile in sglang_trees]
    return [*trees, ("tinyserve", FIXTURE, "tinyserve"), ("tinyserve-noprofile", FIXTURE, None)]


def snapshot(cache: Path, only: set[str] | None = None) -> dict:
    """Name -> everything a scan reports (findings, not-built split, skips), JSON-ready."""
    out = {}
    for name, root, profile in _trees(cache, only):
        if only and name not in only:
            continue
        report = scan_report(root, profile=load_profile(profile) if profile else None)
        out[name] = {
            "findings": [f.to_dict() for f in report.findings],
            "outside_build": [f.to_dict() for f in report.outside_build],
            "not_built": [(n.path, n.summary()) for n in report.not_built],
            "skipped": report.skipped,
            "files_scanned": report.files_scanned,
            "rocm_only": report.rocm_only,
            "build": report.build,
        }
        print(f"{name}: {len(report.findings)} + {len(report.outside_build)} finding(s)", file=sys.stderr)
    return out


def _differences(old: dict, new: dict) -> list[str]:
    lines = []
    for name, parts in old.items():
        for key, value in parts.items():
            before = json.dumps(value, sort_keys=True)
            after = json.dumps(new.get(name, {}).get(key), sort_keys=True)
            if before != after:
                lines.append(f"{name}.{key}: differs ({len(before)} vs {len(after)} chars of JSON)")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=("dump", "check"))
    ap.add_argument("path", type=Path)
    ap.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "rocport-evals")
    ap.add_argument("--only", action="append", help="a tree name (repeatable); default all")
    args = ap.parse_args(argv)
    only = set(args.only) if args.only else None
    data = json.loads(json.dumps(snapshot(args.cache, only)))
    if args.mode == "dump":
        args.path.write_text(json.dumps(data, indent=1, sort_keys=True))
        return 0
    stored = json.loads(args.path.read_text())
    stored = {k: v for k, v in stored.items() if not only or k in only}
    problems = _differences(stored, data)
    print("\n".join(problems) or f"identical: {', '.join(stored)}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
