"""Prefix rules: how a remap renames checkpoint tensors, and what is left wrong after it renames them.

A rule rewrites every name under one dotted checkpoint prefix to a framework prefix; rules are
ordered most specific first. tools/weights/remap.py derives the smallest set of them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class PrefixRule:
    """Rewrite names under `checkpoint` (a dotted prefix, '' = every name) to `framework`."""

    checkpoint: str
    framework: str

    def apply(self, name: str) -> str | None:
        if self.checkpoint == "":
            rest = name
        elif name.startswith(self.checkpoint + "."):
            rest = name[len(self.checkpoint) + 1 :]
        else:
            return None
        return f"{self.framework}.{rest}" if self.framework else rest


@dataclass
class Remap:
    """Ordered rules (most specific first) and what they do to each checkpoint name that changes."""

    rules: list[PrefixRule]
    renamed: dict[str, str] = field(default_factory=dict)


def apply_rules(name: str, rules: Sequence[PrefixRule]) -> str:
    """The name after the first matching rule (rules are ordered most specific first)."""
    for rule in rules:
        new = rule.apply(name)
        if new is not None:
            return new
    return name


def renamer(rules: Sequence[PrefixRule]) -> Callable[[str], str]:
    """apply_rules as one closure over plain (old, new) string prefixes: called once per tensor."""
    pairs = [
        (f"{r.checkpoint}." if r.checkpoint else "", f"{r.framework}." if r.framework else "") for r in rules
    ]

    def rename(name: str) -> str:
        for old, new in pairs:
            if name.startswith(old):
                return new + name[len(old) :]
        return name

    return rename


def order_rules(rules: Iterable[PrefixRule]) -> list[PrefixRule]:
    """Most specific checkpoint prefix first, so a longer prefix always wins."""
    return sorted(
        set(rules), key=lambda r: (-len(r.checkpoint.split(".")) if r.checkpoint else 0, r.checkpoint)
    )


def stacked_name(name: str, mappings: Sequence[tuple[str, str]], expected: set[str]) -> str:
    """The param a checkpoint name loads into through the framework's stacked/fused mapping.

    `mappings` are (param_name, shard_name) pairs in the loader's order; the first whose shard
    name occurs in `name` and yields an expected param wins, else the first that occurs at all.
    """
    first = None
    for param, shard in mappings:
        if shard and shard in name:
            candidate = name.replace(shard, param)
            if candidate in expected:
                return candidate
            first = first or candidate
    return first or name


def check_rules(
    rules: Sequence[PrefixRule],
    checkpoint: Iterable[str],
    expected: Iterable[str],
    mappings: Sequence[tuple[str, str]] = (),
    skip: Sequence[str] = (),
    optional: Iterable[str] = (),
) -> list[str]:
    """Problems left after the rules: expected params not produced (except `optional`), tensors dropped,
    collisions."""
    want = set(expected)
    produced: set[str] = set()
    dropped: list[str] = []
    seen: dict[str, str] = {}
    collisions: list[str] = []
    rename = renamer(rules)
    for name in checkpoint:
        if skip and any(s in name for s in skip):
            continue
        renamed = rename(name)
        if renamed in seen:
            collisions.append(f"{seen[renamed]} and {name} both become {renamed}")
        seen[renamed] = name
        target = stacked_name(renamed, mappings, want)
        if target in want:
            produced.add(target)
        else:
            dropped.append(name)
    problems = []
    if unproduced := sorted(want - produced - set(optional)):
        problems.append(f"{len(unproduced)} expected params not loaded (e.g. {', '.join(unproduced[:3])})")
    if dropped:
        problems.append(
            f"{len(dropped)} checkpoint tensors not consumed (e.g. {', '.join(sorted(dropped)[:3])})"
        )
    if collisions:
        problems.append(f"{len(collisions)} name collisions (e.g. {collisions[0]})")
    return problems
