"""Where a run's wall time goes, by phase: build, unit compile, load check, launch, bench, git, ...

Each graph node runs inside a span named for its phase; work inside a node that belongs to another
phase (a patch's unit compiles or load recheck inside apply_check, a commit) opens its own span and is
counted there only. After each node the seconds it added are emitted as a `timing` event, so a run's
events.jsonl sums to its phase table (evals/bench_strategies.py) across resumes too.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

NODE_PHASE = {
    "checkout": "git",
    "scan": "scan",
    "preflight": "preflight",
    "units": "unit compile",
    "first_wave": "unit compile",
    "build": "build",
    "diagnose": "diagnose",
    "propose": "propose",
    "apply_check": "apply",
    "load_check": "load check",
    "serve": "launch",
    "bench": "bench",
    "report": "report",
}
"""The phase a node's own time counts under (apply: applying, reverting, journaling patches)."""


class PhaseClock:
    """Exclusive wall seconds per phase: time in a nested span is not counted by the span around it."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self._stack: list[list[Any]] = []  # [phase, started, seconds of nested spans]
        self._emitted: dict[str, float] = {}

    @contextmanager
    def span(self, phase: str) -> Iterator[None]:
        frame: list[Any] = [phase, time.monotonic(), 0.0]
        self._stack.append(frame)
        try:
            yield
        finally:
            self._stack.pop()
            took = time.monotonic() - frame[1]
            self.seconds[phase] += took - frame[2]
            if self._stack:
                self._stack[-1][2] += took

    def since_last(self) -> dict[str, float]:
        """Seconds per phase added since the previous call (what one `timing` event carries)."""
        delta = {k: round(v - self._emitted.get(k, 0.0), 3) for k, v in self.seconds.items()}
        self._emitted = dict(self.seconds)
        return {k: v for k, v in delta.items() if v > 0}


# cgroup v1 (cpuacct.usage, ns) or v2 (cpu.stat usage_usec): the container's own CPU time, children included
_CONTAINER_CPU = (
    "cat /sys/fs/cgroup/cpuacct/cpuacct.usage 2>/dev/null || "
    "awk '/^usage_usec/ {print $2 * 1000}' /sys/fs/cgroup/cpu.stat"
)


def container_cpu_s(sandbox) -> float | None:
    """CPU seconds the run's container used so far (None: not a container, or unreadable)."""
    if getattr(sandbox, "container", None) is None:
        return None
    from sandboxes.base import SandboxError

    try:
        result = sandbox.run(_CONTAINER_CPU, timeout=30)
        return int(result.stdout.split()[0]) / 1e9
    except (SandboxError, IndexError, ValueError):  # the container is gone, or no cgroup to read
        return None
