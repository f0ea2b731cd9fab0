"""Remaps replayed over a checkpoint index: rocport's own table, or the entries a loader's own table lacks.

When `load_weights` already renames through a module-level table (tools.weights.loader_table), the fix
a maintainer merges is the missing entry, not a second table: only the names still unmatched after
the existing table are derived, and each derived prefix rule that fits the table's pattern becomes
one entry. The rename function's fallback (`return f"model.mtp.block.{rest}"`) is recognised by its
literal prefix, never by running it.
"""

from __future__ import annotations

from dataclasses import dataclass
from os.path import commonprefix

from tools.weights import PrefixRule, RemapError, apply_rules, check_rules, derive_remap, stacked_name
from tools.weights.loader_source import LoaderSite
from tools.weights.loader_table import (
    LoaderTable,
    TablePattern,
    covers_rest,
    find_loader_table,
    insert_entries,
    learn_pattern,
    table_rules,
)

QUANT_SUFFIXES = (".weight_scale", ".weight_scale_inv", ".weight_scale_2", ".input_scale")


def quant_artifacts(rules: list[PrefixRule], names: list[str], expected: dict, site: LoaderSite) -> set[str]:
    """Expected scale params the checkpoint cannot provide because their module is stored unquantized.

    While an exclusion list names a module by its checkpoint name, the framework builds it quantized and
    expects `weight_scale`s the bf16 checkpoint module never had; the quant_exclusion fix removes them.
    """
    want = set(expected)
    produced = {stacked_name(apply_rules(n, rules), site.mappings, want) for n in names}
    loaded_modules = {p.rsplit(".", 1)[0] for p in produced if p.endswith(".weight")}
    return {
        e for e in want - produced if e.endswith(QUANT_SUFFIXES) and e.rsplit(".", 1)[0] in loaded_modules
    }


def remap_problems(rules: list[PrefixRule], names: list[str], expected: dict, site: LoaderSite) -> list[str]:
    """check_rules, tolerating scale params that only exist because an exclusion is not yet remapped."""
    want = set(expected) - quant_artifacts(rules, names, expected, site)
    return check_rules(rules, names, want, site.mappings, site.skip)


def derive_rules(names: list[str], expected: dict, site: LoaderSite) -> list[PrefixRule]:
    """derive_remap; when it fails on scale params of unquantized modules, again with those optional."""
    try:
        return derive_remap(names, expected, site.mappings, site.skip).rules
    except RemapError as exc:
        want = set(expected)
        produced = {stacked_name(n, site.mappings, want) for n in names}
        scales = {e for e in want - produced if e.endswith(QUANT_SUFFIXES)}
        if exc.ambiguous or not scales:
            raise
        rules = derive_remap(names, want, site.mappings, site.skip, optional=scales).rules
        if remap_problems(rules, names, expected, site):
            raise
        return rules


@dataclass
class TableFix:
    """The loader's own table, its learned pattern, and the entries it lacks for this checkpoint."""

    table: LoaderTable
    pattern: TablePattern
    entries: list[tuple[str, str]]
    fallback: list[PrefixRule]
    """The rename function's own fallback for names no entry matches, as prefix rules."""

    @property
    def rules(self) -> list[PrefixRule]:
        """The patched table and fallback replayed as prefix rules (needs the new source's table order)."""
        return table_rules(self.table, self.pattern) + self.fallback


def _after_table(rules: list[PrefixRule], names: list[str], expected: dict, site: LoaderSite) -> list[str]:
    """Each name as the table renames it when that loads; else as stored, so a missing entry is derived in
    checkpoint terms even where a more general entry renamed it wrongly."""
    want = set(expected)
    out = []
    for name in names:
        renamed = apply_rules(name, rules)
        out.append(renamed if stacked_name(renamed, site.mappings, want) in want else name)
    return out


def _narrow(rule: PrefixRule, names: list[str], taken: set[str]) -> PrefixRule:
    """The rule moved down to the deepest prefix its own names share, when names the table already loads
    live under its prefix: an entry placed before the table's general one must not take those."""
    under = [n for n in names if n.startswith(rule.checkpoint + ".")]
    if not any(n in taken for n in under):
        return rule
    own = [n.split(".")[:-1] for n in under if n not in taken]  # module paths: a rule never names a leaf
    # commonprefix on lists of path components compares whole components, not characters
    extra = ".".join(commonprefix(own))[len(rule.checkpoint) + 1 :] if own else ""  # noqa: RUF071
    if not extra:
        return rule
    return PrefixRule(f"{rule.checkpoint}.{extra}", f"{rule.framework}.{extra}" if rule.framework else extra)


def _split(rest: list[PrefixRule], table: LoaderTable, pattern: TablePattern):
    """(entries to add, fallback rules), or None when a rule is neither."""
    entries, fallback = [], []
    for rule in rest:
        if covers_rest(table, rule, pattern):
            fallback.append(rule)
        elif (entry := pattern.entry(rule)) is not None:
            entries.append(entry)
        else:
            return None
    return entries, fallback


def table_fix(text: str, site: LoaderSite, names: list[str], expected: dict) -> TableFix | None:
    """The entries the loader's own remap table lacks ([] when it loads every tensor already); None when the
    loader has no such table or what is missing does not fit the table's pattern."""
    table = find_loader_table(text, site)
    if table is None:
        return None
    pattern = learn_pattern(table.entries, names, set(expected), site.mappings)
    if pattern is None:
        return None
    after = _after_table(table_rules(table, pattern), names, expected, site)
    try:
        rest = derive_rules(after, expected, site)
    except RemapError:
        return None
    taken = {n for n, a in zip(names, after, strict=True) if n != a}
    split = _split(
        [r if covers_rest(table, r, pattern) else _narrow(r, names, taken) for r in rest], table, pattern
    )
    if split is None:
        return None
    fix = TableFix(table, pattern, *split)
    if fix.entries:
        patched = find_loader_table(insert_entries(text, table, fix.entries), site)
        if patched is None:
            return None
        fix.table = patched
    return None if remap_problems(fix.rules, names, expected, site) else fix


def replay_table(text: str, site: LoaderSite, names: list[str], expected: dict) -> list[PrefixRule] | None:
    """The loader's own table (as patched) with its fallback, as prefix rules; None without such a table."""
    table = find_loader_table(text, site)
    pattern = learn_pattern(table.entries, names, set(expected), site.mappings) if table else None
    if table is None or pattern is None:
        return None
    rules = table_rules(table, pattern)
    try:
        rest = derive_rules(_after_table(rules, names, expected, site), expected, site)
    except RemapError:
        return rules  # what is still unmatched shows up as problems of the replay
    return rules + [r for r in rest if covers_rest(table, r, pattern)]
