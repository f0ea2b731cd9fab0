"""Search strategies over a serving space. `evaluate(candidate, incumbent)` launches one candidate
(the incumbent's probe lets it stop early); the strategies decide what to launch and what wins.

The default is a coordinate search: starting from the framework's defaults, try every value of one
dimension with the others held at the best so far, keep the winner, go on to the next dimension
(the parallel split first, since it moves throughput most). It launches 1 + sum(values - 1)
candidates instead of the product, and assumes dimensions interact weakly; `exhaustive` checks that.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from agent.tune.candidates import Candidate, dimensions, every_candidate, start
from agent.tune.spec import TuneSpace
from tools.tune.records import Search, Trial, rank

Evaluate = Callable[[Candidate, Trial | None], Trial]


def _best(trials: list[Trial]) -> Trial | None:
    ranked = sorted((t for t in trials if t.measured), key=rank)
    return ranked[0] if ranked else None


def coordinate_search(space: TuneSpace, gpus: int, evaluate: Evaluate, wall_budget_s: float) -> Search:
    """One pass over the dimensions; launches nothing new once the wall budget is spent."""
    t0 = time.monotonic()
    search = Search("coordinate", grid_size=len(every_candidate(space, gpus)))
    seen: dict[Candidate, Trial] = {}
    incumbent_cand = start(space, gpus)
    incumbent = None
    for name, values in dimensions(space, gpus):
        for value in values:
            cand = incumbent_cand.with_setting(name, value)
            if cand in seen:
                continue
            if search.trials and time.monotonic() - t0 > wall_budget_s:  # the start is always measured
                search.stopped_by_budget = True
                break
            seen[cand] = evaluate(cand, incumbent)
            search.trials.append(seen[cand])
            leader = _best([incumbent, seen[cand]] if incumbent else [seen[cand]])
            if leader is seen[cand]:
                incumbent, incumbent_cand = leader, cand
    search.best = incumbent.key if incumbent else None
    search.wall_s = round(time.monotonic() - t0, 2)
    return search


def exhaustive_search(space: TuneSpace, gpus: int, evaluate: Evaluate) -> Search:
    """Every candidate with its full benchmark: the reference a cheaper search is checked against."""
    t0 = time.monotonic()
    grid = every_candidate(space, gpus)
    search = Search("exhaustive", grid_size=len(grid))
    search.trials = [evaluate(cand, None) for cand in grid]
    best = _best(search.trials)
    search.best = best.key if best else None
    search.wall_s = round(time.monotonic() - t0, 2)
    return search
