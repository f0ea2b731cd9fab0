"""Score `rocport diagnose` on logs people posted in public issue threads.

Prints, per split, the corpus size and the share of logs whose headline failure has the expected
kind, file and symbol, the crashes and the slowest log. Misses are listed for dev/ only: rules are
tuned on dev/, and test/ is read only through its scores (`--show-test` lists its misses too).

    python3 evals/bench_diagnose_real.py [--show-test] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys

from evals.diagnose_real import FIELDS, SPLITS, TARGETS, SplitScore, score_split


def _line(score: SplitScore) -> str:
    rates = "  ".join(f"{name} {score.rate(name):6.1%}" for name in FIELDS)
    return (
        f"{score.split:5} {len(score.results):3} logs  {rates}  crashes {len(score.crashes)}"
        f"  max {score.max_seconds * 1000:6.1f} ms/log"
    )


def _misses(score: SplitScore) -> list[str]:
    lines = []
    for r in score.results:
        wrong = [n for n in FIELDS if not r.hit(n)]
        if r.crash:
            lines.append(f"  {r.name}: CRASH {r.crash}")
        elif wrong:
            got = r.got or {}
            detail = ", ".join(f"{n}: want {r.expected.get(n)!r} got {got.get(n)!r}" for n in wrong)
            lines.append(f"  {r.name}: {detail}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--show-test", action="store_true", help="also list the misses on test/")
    parser.add_argument("--json", action="store_true", help="print the scores as JSON")
    args = parser.parse_args(argv)
    scores = [score_split(split) for split in SPLITS]
    if args.json:
        print(
            json.dumps(
                {
                    s.split: {
                        "logs": len(s.results),
                        **{n: round(s.rate(n), 4) for n in FIELDS},
                        "crashes": len(s.crashes),
                        "max_seconds": round(s.max_seconds, 4),
                    }
                    for s in scores
                },
                indent=2,
            )
        )
        return 0
    print(
        "targets on test/: "
        + "  ".join(f"{n} >= {t:.0%}" for n, t in TARGETS.items())
        + ", no crash, < 1 s/log"
    )
    for score in scores:
        print(_line(score))
    for score in scores:
        if score.split == "dev" or args.show_test:
            misses = _misses(score)
            print(f"{score.split} misses ({len(misses)}):" if misses else f"{score.split}: no misses")
            print("\n".join(misses)) if misses else None
    return 0


if __name__ == "__main__":
    sys.exit(main())
