"""The smallest prefix remap that makes a checkpoint's tensor names load into a framework's params.

Only names unmatched on both sides are remapped. Each unmatched checkpoint tensor is paired with the
unmatched expected parameter sharing its longest dotted suffix (after the framework's stacked/fused
mapping, e.g. q_proj -> qkv_proj), longest suffixes first, so expert 17 pairs with expert 17 before
the shared expert's `down_proj.weight` looks for a partner. A pair defines a prefix translation
(`model.layers.61.` -> `model.mtp.`); the fewest translations placed on the checkpoint's name tree
(most specific prefix wins) that reproduce every pair is the remap. Two minimal remaps that map
names differently make the remap ambiguous, and nothing is proposed.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Iterable, Sequence
from functools import cache
from itertools import product

from tools.weights.prefix_rules import PrefixRule, Remap, check_rules, order_rules, renamer, stacked_name

Path_ = tuple[str, ...]
Translation = tuple[Path_, Path_]  # (checkpoint prefix, framework prefix), common tail stripped
IDENTITY: Translation = ((), ())
Placements = tuple[tuple[Path_, Translation], ...]
"""Where rules sit in the name tree: (node, translation applied under it)."""
Ties = tuple[tuple[Path_, Path_], ...]
"""(name, where it maps) for names several unloaded params could take: two solutions differ there."""
Solution = tuple[Placements, Ties]
KEEP_SOLUTIONS = 8
# A tie this large is not a rename (e.g. every gate_proj vs every gate_up_proj): stop before pairing it.
MAX_TIE_PAIRS = 4096
INF = float("inf")
# Characters that sort between a name and its '.'-children ('-' in "a.b-c"): they defeat subtree skipping.
_ODD_CHARS = re.compile(r"[\x00-\x2d]")


class RemapError(ValueError):
    """No single consistent remap exists; `ambiguous` when several fit equally well."""

    def __init__(self, message: str, *, ambiguous: bool = False):
        super().__init__(message)
        self.ambiguous = ambiguous


def _pair_by_suffix(keys: dict[Path_, list[str]], unmatched_expected: list[Path_]) -> dict[Path_, set[Path_]]:
    """Pair forward keys with expected names by longest common dotted suffix, longest first."""
    options: dict[Path_, set[Path_]] = {}
    free_keys, free_exp = set(keys), set(unmatched_expected)
    longest = max((len(k) for k in list(keys) + unmatched_expected), default=0)
    for length in range(longest, 0, -1):
        by_suffix_k: dict[Path_, list[Path_]] = defaultdict(list)
        by_suffix_e: dict[Path_, list[Path_]] = defaultdict(list)
        for k in free_keys:
            if len(k) >= length:
                by_suffix_k[k[-length:]].append(k)
        for e in free_exp:
            if len(e) >= length:
                by_suffix_e[e[-length:]].append(e)
        for suffix, ks in by_suffix_k.items():
            es = by_suffix_e.get(suffix)
            if not es:
                continue
            if len(ks) > 1 and len(ks) * len(es) > MAX_TIE_PAIRS:
                raise RemapError(
                    f"{len(ks)} checkpoint tensors and {len(es)} params pair only through the "
                    f"suffix '{'.'.join(suffix)}' (e.g. {'.'.join(min(ks))}): not a prefix rename; "
                    f"is a stacked/fused mapping of the loader missing?"
                )
            for k in ks:  # a tie (several on either side) keeps every option for the tree search
                options[k] = set(es)
            free_keys.difference_update(ks)
            free_exp.difference_update(es)
    return options


def _translation(ckpt: Path_, fwd: Path_, target: Path_) -> Translation | None:
    if len(ckpt) != len(fwd):
        return None
    common = 0
    while common < min(len(fwd), len(target)) and fwd[-1 - common] == target[-1 - common]:
        common += 1
    if common == 0:
        return None
    return ckpt[: len(ckpt) - common], target[: len(target) - common]


def _translate(t: Translation, name: Path_) -> Path_:
    return t[1] + name[len(t[0]) :]


class _Search:
    """Fewest translations placed on the checkpoint's name tree that realise every pairing."""

    def __init__(
        self,
        names: list[str],
        unmatched: dict[Path_, tuple[Path_, set[Path_]]],
        expected: set[str],
        mappings: Sequence[tuple[str, str]],
    ):
        # checkpoint name -> acceptable framework targets
        self.unmatched = {n: {".".join(e) for e in targets} for n, (_, targets) in unmatched.items()}
        self.expected, self.mappings = expected, mappings
        self.is_name: set[str] = set(names)
        # the name tree is walked only where unmatched names live; its children come from the sorted
        # names by bisection, so 100k matched names cost one sort, not one walk each
        self.sorted_names = sorted(names)
        self.plain = not _ODD_CHARS.search(".".join(names))
        self.has_unmatched: set[Path_] = set()
        self.candidates: dict[Path_, dict[Translation, int]] = defaultdict(lambda: defaultdict(int))
        for n in unmatched:
            for i in range(len(n)):
                self.has_unmatched.add(n[:i])
        for n, (forward, targets) in unmatched.items():
            for e in targets:
                if (t := _translation(n, forward, e)) is not None:
                    self.add_candidate(n, t)

    @cache  # noqa: B019 - one search object per derivation, freed with it
    def children(self, node: Path_) -> tuple[Path_, ...]:
        """The next-level nodes under `node`, in sorted order."""
        names, prefix = self.sorted_names, ".".join(node) + "." if node else ""
        lo = bisect_left(names, prefix)
        hi = bisect_left(names, prefix[:-1] + "/") if node else len(names)  # '/' sorts right after '.'
        heads: set[str] = set()
        i = lo
        while i < hi:
            head = names[i][len(prefix) :].split(".", 1)[0]
            heads.add(head)
            # skip the head's whole subtree; only safe when no name has a character sorting before '.'
            i = bisect_left(names, prefix + head + "/", i, hi) if self.plain else i + 1
        return tuple((*node, h) for h in sorted(heads))

    def add_candidate(self, name: Path_, t: Translation) -> None:
        for depth in range(len(t[0]), len(name)):
            self.candidates[name[:depth]][t] += 1

    def _leaf_ok(self, name: Path_, t: Translation) -> bool:
        if name not in self.unmatched:
            return t == IDENTITY
        renamed = ".".join(_translate(t, name))
        return stacked_name(renamed, self.mappings, self.expected) in self.unmatched[name]

    @cache  # noqa: B019 - one search object per derivation, freed with it
    def solve(self, node: Path_, rule: Translation) -> tuple[float, tuple[Solution, ...]]:
        """(cost, up to KEEP_SOLUTIONS (placements, tie choices)) for the subtree under `node`.

        Solutions that place rules differently but map every tied name the same are one solution.
        """
        if node not in self.has_unmatched and node not in self.unmatched:
            if rule == IDENTITY:
                return 0, (((), ()),)
            return 1, ((((node, IDENTITY),), ()),)  # shield already-matched names from a broader rule
        ranked = sorted(self.candidates.get(node, {}).items(), key=lambda kv: -kv[1])
        # at equal cost a rule here beats the same rule deeper: the shortest prefix reads best
        options = [(1, t) for t, _ in ranked if t != rule] + [(0, rule)]
        if rule != IDENTITY and IDENTITY not in self.candidates.get(node, {}):
            options.append((1, IDENTITY))
        best = INF
        sols: dict[Ties, Placements] = {}
        for extra, t in options:
            cost, sub = self._subtree(node, t)
            cost += extra
            if cost == INF or cost > best:
                continue
            if cost < best:
                best, sols = cost, {}
            for placed, ties in sub:
                sols.setdefault(ties, (*placed, (node, t)) if extra else placed)
        return best, tuple((p, ties) for ties, p in list(sols.items())[:KEEP_SOLUTIONS])

    def _subtree(self, node: Path_, t: Translation) -> tuple[float, list[Solution]]:
        ties: Ties = ()
        if ".".join(node) in self.is_name:
            if not self._leaf_ok(node, t):
                return INF, []
            if len(self.unmatched.get(node, ())) > 1:
                ties = ((node, _translate(t, node)),)
        total = 0.0
        combos: list[Solution] = [((), ties)]
        for child in self.children(node):
            cost, sols = self.solve(child, t)
            if cost == INF:
                return INF, []
            total += cost
            combos = [(pa + pb, ta + tb) for (pa, ta), (pb, tb) in product(combos, sols)][:KEEP_SOLUTIONS]
        return total, combos


def _rules_from(placements: Placements) -> list[PrefixRule]:
    rules = [PrefixRule(".".join(node), ".".join(_translate(t, node))) for node, t in placements]
    return order_rules(rules)


def derive_remap(
    checkpoint: Iterable[str],
    expected: Iterable[str],
    mappings: Sequence[tuple[str, str]] = (),
    skip: Sequence[str] = (),
    optional: Iterable[str] = (),
) -> Remap:
    """The smallest consistent prefix remap; raises RemapError when none or several fit.

    `optional` expected params may stay unproduced (e.g. scales of a module the checkpoint stores unquantized).
    """
    want = set(expected)
    names = [n for n in checkpoint if not any(s in n for s in skip)]
    fwd = {n: stacked_name(n, mappings, want) for n in names}
    produced = {f for f in fwd.values() if f in want}
    unmatched = [n for n in names if fwd[n] not in want]
    if not unmatched and not want - produced - set(optional):
        return Remap([])
    keys: dict[Path_, list[str]] = defaultdict(list)
    for n in unmatched:
        keys[tuple(fwd[n].split("."))].append(n)
    options = _pair_by_suffix(keys, [tuple(e.split(".")) for e in sorted(want - produced)])
    pairs = {tuple(n.split(".")): (key, targets) for key, targets in options.items() for n in keys[key]}
    orphans = [n for k, ns in keys.items() if k not in options for n in ns]
    if orphans:
        raise RemapError(
            f"{len(orphans)} checkpoint tensors share no name suffix with any unloaded "
            f"param (e.g. {', '.join(sorted(orphans)[:3])}); not a rename"
        )
    search = _Search(names, pairs, want, mappings)
    cost, solutions = search.solve((), IDENTITY)
    if cost == INF:
        raise RemapError("no prefix remap maps every unmatched tensor to its counterpart")
    return _choose(solutions, names, want, mappings, skip, set(optional))


def _choose(
    solutions: tuple[Solution, ...],
    names: list[str],
    want: set[str],
    mappings: Sequence[tuple[str, str]],
    skip: Sequence[str],
    optional: set[str],
) -> Remap:
    valid: dict[tuple[tuple[str, str], ...], list[PrefixRule]] = {}
    problems: list[str] = []
    for placements, _ in solutions:
        rules = _rules_from(placements)
        problems = check_rules(rules, names, want, mappings, skip, optional)
        if problems:
            continue
        rename = renamer(rules)
        mapping = tuple(sorted((n, r) for n in names if (r := rename(n)) != n))
        valid.setdefault(mapping, rules)
    if not valid:
        raise RemapError(f"the smallest remap is inconsistent: {'; '.join(problems)}")
    if len(valid) > 1:
        a, b = list(valid.values())[:2]

        def show(rs: list[PrefixRule]) -> str:
            return ", ".join(f"{r.checkpoint}->{r.framework}" for r in rs)

        raise RemapError(f"ambiguous: two remaps fit equally ({show(a)} | {show(b)})", ambiguous=True)
    mapping, rules = next(iter(valid.items()))
    return Remap(rules, dict(mapping))
