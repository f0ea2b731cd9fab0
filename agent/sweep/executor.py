"""Running a sweep's cells: a local pool by default, or tasks on an existing Ray cluster.

Cells that share a build key (framework ref + image + arch) run in order in one task so they reuse
one build. Cells already recorded for the night are skipped, which is how a killed sweep resumes.
One cell failing never stops the others: its exception becomes an `error` result.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from agent.sweep.cells import Cell
from agent.sweep.results import CellResult, ResultStore

CellRunner = Callable[[Cell, str, Path], CellResult]
"""run(cell, night, workdir) -> CellResult. workdir is shared by the cells of one build group."""


def build_groups(cells: Iterable[Cell]) -> list[list[Cell]]:
    groups: dict[str, list[Cell]] = {}
    for cell in cells:
        groups.setdefault(cell.build_key, []).append(cell)
    return list(groups.values())


def _run_group(group: list[dict], night: str, sweep: str, workroot: str, runner: CellRunner) -> list[dict]:
    """Run one build group's cells in order; plain dicts in and out so Ray can ship them."""
    out = []
    for data in group:
        cell = Cell.from_dict(data)
        workdir = Path(workroot) / night / cell.build_key
        workdir.mkdir(parents=True, exist_ok=True)
        started = time.time()
        try:
            result = runner(cell, night, workdir)
        except Exception as exc:  # noqa: BLE001 - one cell's crash must not stop the sweep; record it instead
            result = CellResult(
                cell_key=cell.key,
                night=night,
                sweep=sweep,
                status="error",
                reason=f"{type(exc).__name__}: {exc}",
                failures=[
                    {
                        "kind": "unknown",
                        "signature": f"rocport-error:{type(exc).__name__}",
                        "message": traceback.format_exc(limit=3)[-500:],
                    }
                ],
            )
        result.sweep, result.night = sweep, night
        result.started = result.started or started
        result.finished = result.finished or time.time()
        out.append(result.to_dict())
    return out


def run_sweep(
    cells: list[Cell],
    *,
    night: str,
    sweep: str,
    store: ResultStore,
    workroot: Path,
    runner: CellRunner,
    jobs: int = 1,
    ray_address: str | None = None,
    on_result: Callable[[CellResult], None] | None = None,
) -> list[CellResult]:
    """Run every cell not yet recorded for `night`; record each result as soon as it arrives."""
    todo = [c for c in cells if not store.has(c.key, night)]
    groups = [[c.to_dict() for c in g] for g in build_groups(todo)]
    recorded: list[CellResult] = []

    def take(batch: list[dict]) -> None:
        for data in batch:
            result = CellResult(**data)
            store.record(result)
            recorded.append(result)
            if on_result:
                on_result(result)

    if ray_address:
        for batch in _run_on_ray(groups, night, sweep, str(workroot), runner, ray_address):
            take(batch)
    else:
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            futures = [pool.submit(_run_group, g, night, sweep, str(workroot), runner) for g in groups]
            for fut in as_completed(futures):
                take(fut.result())
    return recorded


def _run_on_ray(
    groups: list[list[dict]], night: str, sweep: str, workroot: str, runner: CellRunner, address: str
):
    """Each build group is one Ray task asking for the CPUs its cells declare."""
    try:
        import ray
    except ImportError as exc:
        raise RuntimeError("--ray needs the ray package: pip install 'rocport[ray]'") from exc
    ray.init(address=address, ignore_reinit_error=True, log_to_driver=False)
    try:
        task = ray.remote(_run_group)
        refs = [
            task.options(num_cpus=g[0]["options"]["cpus"]).remote(g, night, sweep, workroot, runner)
            for g in groups
        ]
        pending = list(refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            yield ray.get(done[0])
    finally:
        ray.shutdown()
