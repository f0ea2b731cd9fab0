"""The model's own checkpoint-name remap: a module-level table of (checkpoint, registered) string pairs
read by the function `load_weights` calls on each name (`name = self.remap_checkpoint_name(name)`).

Read with `ast`, never imported or run. Its pattern is learned from the entries that already load:
entry (a, b) means checkpoint `P + a` becomes `Q + b` (GLM: P = `model.layers.<N>.`, Q = `model.mtp.`),
and the table replays as prefix rules over this checkpoint, so a fix can add an entry instead of
writing a second table.
"""

from __future__ import annotations

import ast
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tools.weights.loader_source import REMAP_FUNCTION, LoaderSite
from tools.weights.prefix_rules import PrefixRule


@dataclass
class LoaderTable:
    """A remap table the loader's rename function reads, and where it sits in the source."""

    function: str
    """The rename function's name (a method of the model class when `is_method`)."""
    is_method: bool
    table: str
    entries: list[tuple[str, str]]
    entry_lines: list[int]
    """1-based line of each entry; every entry on its own line (else the table is not edited)."""
    end_line: int
    """1-based last line of the table (its closing bracket)."""
    function_text: str
    self_attrs: set[str]
    """`self.<attr>` the rename method reads: it can run only once they are set."""


@dataclass(frozen=True)
class TablePattern:
    """Entry (a, b) renames checkpoint `checkpoint + a` to `framework + b`."""

    checkpoint: str
    framework: str

    def rule(self, entry: tuple[str, str]) -> PrefixRule:
        return PrefixRule(self.checkpoint + entry[0], self.framework + entry[1])

    def entry(self, rule: PrefixRule) -> tuple[str, str] | None:
        """The entry a prefix rule would be in this table, or None when it does not fit the pattern."""
        a, b = rule.checkpoint, rule.framework
        if a.startswith(self.checkpoint) and b.startswith(self.framework):
            a, b = a[len(self.checkpoint) :], b[len(self.framework) :]
            if a and b:
                return a, b
        return None


def _pairs(node: ast.AST) -> list[ast.Tuple] | None:
    if not isinstance(node, (ast.Tuple, ast.List)) or not node.elts:
        return None
    pairs = [e for e in node.elts if isinstance(e, ast.Tuple)]
    if len(pairs) == len(node.elts) and all(
        len(e.elts) == 2 and all(isinstance(x, ast.Constant) and isinstance(x.value, str) for x in e.elts)
        for e in pairs
    ):
        return pairs
    return None


def _string(node: ast.expr) -> str:
    """A string constant's value (_pairs lets only those through)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    raise ValueError(f"not a string constant: {ast.dump(node)}")


def _rename_call(func: ast.FunctionDef, site: LoaderSite) -> tuple[str, bool] | None:
    """(function, is_method) of the loop's `name = f(name)` / `name = self.f(name)`, rocport's own excluded."""
    for node in ast.walk(func):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.value, ast.Call)):
            continue
        target, call = node.targets[0], node.value
        if not (
            isinstance(target, ast.Name)
            and target.id == site.name_var
            and len(call.args) == 1
            and isinstance(call.args[0], ast.Name)
            and call.args[0].id == site.name_var
        ):
            continue
        if isinstance(call.func, ast.Name) and call.func.id != REMAP_FUNCTION:
            return call.func.id, False
        if (
            isinstance(call.func, ast.Attribute)
            and isinstance(call.func.value, ast.Name)
            and call.func.value.id == "self"
        ):
            return call.func.attr, True
    return None


def _class(tree: ast.Module, name: str) -> ast.ClassDef | None:
    return next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name), None)


def _function(body: list[ast.stmt], name: str) -> ast.FunctionDef | None:
    return next((n for n in body if isinstance(n, ast.FunctionDef) and n.name == name), None)


def find_loader_table(source: str, site: LoaderSite) -> LoaderTable | None:
    """The table the loader's own rename function reads, or None when load_weights renames nothing."""
    tree = ast.parse(source)
    cls = _class(tree, site.class_name)
    load = _function(cls.body, "load_weights") if cls else None
    found = _rename_call(load, site) if load else None
    if found is None or cls is None:  # (a rename call is only found inside the class)
        return None
    name, is_method = found
    func = _function(cls.body if is_method else tree.body, name)
    if func is None:
        return None
    used = {n.id for n in ast.walk(func) if isinstance(n, ast.Name)}
    tables = [
        (n, target.id, elts)
        for n in tree.body
        if isinstance(n, ast.Assign)
        and len(n.targets) == 1
        and isinstance(target := n.targets[0], ast.Name)
        and target.id in used
        and (elts := _pairs(n.value)) is not None
    ]
    if len(tables) != 1:
        return None
    node, table_name, elts = tables[0]
    lines = [e.lineno for e in elts]
    if len(set(lines)) != len(lines) or any(e.lineno != e.end_lineno for e in elts):
        return None  # entries sharing a line cannot take a one-line insertion
    attrs = {
        n.attr
        for n in ast.walk(func)
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self"
    }
    return LoaderTable(
        name,
        is_method,
        table_name,
        [(_string(e.elts[0]), _string(e.elts[1])) for e in elts],
        lines,
        node.end_lineno or node.lineno,  # (always set on a parsed statement)
        ast.get_source_segment(source, func) or "",
        attrs,
    )


def _heads(name: str, part: str) -> list[str]:
    """Every prefix `P` (ending in '.' or empty) such that name == P + part + '.' + tail."""
    out, dotted = [], "." + name
    start = dotted.find("." + part + ".")
    while start != -1:
        out.append(name[:start])  # dotted[start] is the '.' at name[start - 1]: the head keeps it
        start = dotted.find("." + part + ".", start + 1)
    return out


def _tails(tail: str, mappings: Sequence[tuple[str, str]]) -> list[str]:
    """A checkpoint tail as stored and as the loader's stacked mapping renames it (q_proj -> qkv_proj)."""
    return [tail] + [tail.replace(shard, param) for param, shard in mappings if shard and shard in tail]


def learn_pattern(
    entries: Sequence[tuple[str, str]],
    names: Iterable[str],
    expected: set[str],
    mappings: Sequence[tuple[str, str]] = (),
) -> TablePattern | None:
    """The (checkpoint head, registered head) most entries agree on, from tensors that load through them."""
    names = list(names)
    votes: Counter[tuple[str, str]] = Counter()
    for a, b in entries:
        heads_by_tail: dict[str, set[str]] = defaultdict(set)  # registered `b + tail` -> heads before it
        for e in expected:
            for q in _heads(e, b):
                heads_by_tail[e[len(q) + len(b) :]].add(q)
        agreeing: set[tuple[str, str]] = set()
        for n in names:
            for p in _heads(n, a):
                for tail in _tails(n[len(p) + len(a) :], mappings):
                    agreeing.update((p, q) for q in heads_by_tail.get(tail, ()) if p + a != q + b)
        votes.update(agreeing)  # one vote per entry and pattern
    if not votes:
        return None
    (best, count), *rest = [*votes.most_common(2), ((), 0)]
    if rest and rest[0][1] == count:
        return None  # two patterns explain the entries equally well
    return TablePattern(*best)


def table_rules(table: LoaderTable, pattern: TablePattern) -> list[PrefixRule]:
    """The table's entries as prefix rules over this checkpoint, in table order (first match wins)."""
    return [pattern.rule(e) for e in table.entries]


def covers_rest(table: LoaderTable, rule: PrefixRule, pattern: TablePattern) -> bool:
    """True when `rule` is the rename function's fallback for its head (`return f"<framework>.{rest}"`)."""
    return rule.checkpoint + "." == pattern.checkpoint and any(
        f"{q}{rule.framework}." in table.function_text for q in "\"'"
    )


def insert_entries(source: str, table: LoaderTable, new: Sequence[tuple[str, str]]) -> str:
    """The source with `new` entries added, each before the first entry less specific than it."""
    lines = source.splitlines(keepends=True)
    template = lines[table.entry_lines[0] - 1]
    indent = template[: len(template) - len(template.lstrip())]
    quote = "'" if template.lstrip().startswith("('") else '"'
    inserts: dict[int, list[str]] = {}
    for a, b in new:
        depth = a.count(".")
        at = next(
            (
                line
                for (old, _), line in zip(table.entries, table.entry_lines, strict=True)
                if old.count(".") < depth or a.startswith(old + ".")
            ),
            table.end_line,
        )
        inserts.setdefault(at, []).append(f"{indent}({quote}{a}{quote}, {quote}{b}{quote}),\n")
    out = []
    for number, line in enumerate(lines, start=1):
        out.extend(inserts.get(number, []))
        out.append(line)
    return "".join(out)
