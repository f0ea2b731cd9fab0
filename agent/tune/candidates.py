"""Candidates of a serving space: a parallel split of the node plus one value per switch, and the
launch command and environment that start each one."""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from agent.tune.spec import TuneSpace

SPLIT = "split"
"""The name of the parallel-split dimension in search logs and tables."""
OMIT = (None, "", "default")
"""Switch values that leave the flag or variable out: the framework's own default."""


@dataclass(frozen=True)
class Split:
    """TP x DP (x EP inside) of one node."""

    tp: int
    dp: int
    ep: int = 1

    @property
    def gpus(self) -> int:
        return self.tp * self.dp

    def label(self) -> str:
        return f"TP{self.tp}xDP{self.dp}" + (f" EP{self.ep}" if self.ep > 1 else "")


@dataclass(frozen=True)
class Candidate:
    """One serving configuration: a split and a value for every switch (in the profile's order)."""

    split: Split
    values: tuple[tuple[str, object], ...]

    def key(self) -> str:
        return " ".join([self.split.label().replace(" ", "-"), *(f"{k}={v}" for k, v in self.values)])

    def setting(self, name: str):
        return self.split if name == SPLIT else dict(self.values)[name]

    def with_setting(self, name: str, value) -> Candidate:
        if name == SPLIT:
            return Candidate(value, self.values)
        return Candidate(self.split, tuple((k, value if k == name else v) for k, v in self.values))


def splits(space: TuneSpace, gpus: int) -> list[Split]:
    """Every TP x DP split of `gpus` the space allows, each with and without EP when EP is declared."""
    out = []
    for tp in space.parallel.tp:
        if tp < 1 or gpus % tp:
            continue
        dp = gpus // tp
        eps = {"none": [1], "tp": [1, tp], "world": [1, gpus]}[space.parallel.ep]
        out += [Split(tp, dp, ep) for ep in dict.fromkeys(eps)]
    return out


def start(space: TuneSpace, gpus: int) -> Candidate:
    """Where the search begins: the first split and every switch's first (default) value."""
    options = splits(space, gpus)
    if not options:
        raise ValueError(
            f"no TP size in the profile's tune.parallel.tp {space.parallel.tp} divides {gpus} GPUs; "
            "pass --gpus with a multiple of one of them"
        )
    return Candidate(options[0], tuple((s.name, s.values[0]) for s in space.switches))


def dimensions(space: TuneSpace, gpus: int) -> list[tuple[str, list]]:
    """(name, values) of each dimension, the split first (it moves throughput most)."""
    return [(SPLIT, splits(space, gpus)), *((s.name, list(s.values)) for s in space.switches)]


def every_candidate(space: TuneSpace, gpus: int) -> list[Candidate]:
    """The full grid, as an exhaustive search would launch it."""
    grid = [start(space, gpus)]
    for name, values in dimensions(space, gpus):
        grid = [c.with_setting(name, v) for c in grid for v in values]
    return grid


def _render(template: str, value) -> str:
    if isinstance(value, bool):
        value = "1" if value else "0"
    return template.replace("{value}", str(value))


def launch_args(space: TuneSpace, cand: Candidate) -> str:
    """Flags this candidate adds to the profile's launch command (base args, EP, switches)."""
    parts = [space.base_args] if space.base_args else []
    if cand.split.ep > 1 and space.parallel.ep_arg:
        parts.append(space.parallel.ep_arg.replace("{ep}", str(cand.split.ep)))
    by_name = {s.name: s for s in space.switches}
    for name, value in cand.values:
        arg = by_name[name].arg
        if arg and value not in OMIT:
            parts.append(_render(arg, value))
    return " ".join(p for p in parts if p.strip())


def launch_env(space: TuneSpace, cand: Candidate) -> dict[str, str]:
    """Environment variables this candidate sets (e.g. SGLANG_USE_AITER=0)."""
    by_name = {s.name: s for s in space.switches}
    env: dict[str, str] = {}
    for name, value in cand.values:
        if value not in OMIT:
            env.update({k: _render(v, value) for k, v in by_name[name].env.items()})
    return env


def shell_line(command: str, env: dict[str, str]) -> str:
    """`VAR=value ... command`, what a user pastes to reproduce a launch."""
    prefix = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(env.items()))
    return f"{prefix} {command}".strip()
