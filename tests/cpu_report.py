"""Where the suite's CPU goes: an opt-in pytest plugin and its summary (wall time on the shared 2-core
machine measures everyone's load; CPU seconds measure the suite).

    CPU_REPORT=/tmp/cpu .venv/bin/python -m pytest -p tests.cpu_report -n auto --dist loadgroup tests/...
    .venv/bin/python -m tests.cpu_report /tmp/cpu [--top 25]

Each test's wall seconds, the CPU of the pytest process itself, and the CPU of the child processes it
reaped during the test (rocport subprocesses, compilers, servers that were waited for). Not counted:
processes nobody waits for (a killed server's orphans) and Docker containers (their CPU is the
daemon's children's; the summary prints the Docker cgroup's total when the machine has one, which
includes other users' containers)."""

from __future__ import annotations

import argparse
import os
import time
from collections import defaultdict
from pathlib import Path

import pytest

DOCKER_CPUACCT = Path("/sys/fs/cgroup/cpuacct/docker/cpuacct.usage")
_rows: list[tuple[str, float, float, float]] = []
_DOCKER_AT_START = pytest.StashKey[float | None]()


def _docker_cpu_s() -> float | None:
    try:
        return int(DOCKER_CPUACCT.read_text()) / 1e9
    except (OSError, ValueError):
        return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    before, started = os.times(), time.monotonic()
    yield
    after = os.times()
    own = after.user - before.user + after.system - before.system
    kids = after.children_user - before.children_user + after.children_system - before.children_system
    _rows.append((item.nodeid, time.monotonic() - started, own, kids))


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[_DOCKER_AT_START] = _docker_cpu_s()


def pytest_sessionfinish(session: pytest.Session) -> None:
    out = os.environ.get("CPU_REPORT")
    if not out:
        return
    Path(out).mkdir(parents=True, exist_ok=True)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    lines = [f"{nodeid}\t{wall:.2f}\t{own:.2f}\t{kids:.2f}\n" for nodeid, wall, own, kids in _rows]
    start, end = session.config.stash.get(_DOCKER_AT_START, None), _docker_cpu_s()
    if worker == "main" and start is not None and end is not None:
        lines.append(f"#docker\t{end - start:.2f}\n")
    (Path(out) / f"{worker}-{os.getpid()}.tsv").write_text("".join(lines))


def summary(folder: Path, top: int = 25) -> str:
    """By file, then the `top` tests, by CPU (own + children), from every worker's TSV in folder."""
    tests, docker = [], None
    for path in sorted(folder.glob("*.tsv")):
        for line in path.read_text().splitlines():
            name, *values = line.split("\t")
            if name == "#docker":
                docker = float(values[0])
            else:
                tests.append((name, *map(float, values)))
    by_file: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0])
    for name, wall, own, kids in tests:
        entry = by_file[name.split("::", 1)[0]]
        entry[0], entry[1], entry[2] = entry[0] + wall, entry[1] + own + kids, entry[2] + 1
    total = sum(own + kids for _, _, own, kids in tests)
    out = [f"{len(tests)} tests, {total:.0f} s CPU (pytest + reaped children)"]
    if docker is not None:
        out.append(f"Docker cgroup over the session: {docker:.0f} s CPU (every container on the machine)")
    out.append("\n  CPU s   wall s  tests  file")
    for file, (wall, cpu, n) in sorted(by_file.items(), key=lambda kv: -kv[1][1])[:top]:
        out.append(f"{cpu:7.1f} {wall:8.1f} {n:6.0f}  {file}")
    out.append("\n  CPU s   wall s  test")
    for name, wall, own, kids in sorted(tests, key=lambda t: -(t[2] + t[3]))[:top]:
        out.append(f"{own + kids:7.1f} {wall:8.1f}  {name}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Summarise a CPU_REPORT folder.")
    parser.add_argument("folder", type=Path)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args(argv)
    print(summary(args.folder, args.top))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
