"""weight_name: a prefix remap table in the model's `load_weights`, derived from the two name sets.

The checkpoint's tensor names (safetensors index, no tensor data) and the framework's expected
parameter names give the smallest consistent prefix remap (tools.weights.remap); it goes into the
model file as a module-level table plus one line at the top of the `for name, loaded_weight in
weights:` loop. When load_weights already renames through a table of its own (`name =
self.remap_checkpoint_name(name)` reading MTP_SUBMODULES), only the entries that table lacks are added
(agent.proposers.rules.loader_remap): the one-line fix a maintainer merges. Validation replays the patched
table over the checkpoint index.
"""

from __future__ import annotations

import re
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from agent.proposers.rules.base import Decline, Workspace, make_proposal, register
from agent.proposers.rules.loader_remap import TableFix, derive_rules, remap_problems, replay_table, table_fix
from sandboxes.local import LocalSandbox
from tools import git as gitops
from tools.records import CheckResult, Failure, Proposal
from tools.weights import (
    Checkpoint,
    CheckpointError,
    PrefixRule,
    RemapError,
    expected_from_hook,
    load_checkpoint,
)
from tools.weights.loader_source import (
    REMAP_FUNCTION,
    LoaderSite,
    find_loader_sites,
    read_remap_table,
)
from tools.weights.loader_table import find_loader_table, insert_entries
from tools.weights.name_fix import describe_layout, with_remap

FAMILY = "weight_names"
HOOK_TIMEOUT_S = 600
_FRAME = re.compile(r'File "(?P<path>[^"]+\.py)", line \d+')


@dataclass
class LoaderFile:
    """The model file whose load_weights reads the failing names."""

    rel: str
    text: str
    site: LoaderSite


def read_checkpoint(ws: Workspace) -> Checkpoint:
    """The workspace checkpoint's names (index only) and config.json; Decline when absent or corrupt."""
    if ws.checkpoint is None:
        raise Decline("no checkpoint in the workspace: weight-name remaps are derived from its tensor names")
    try:
        return load_checkpoint(ws.checkpoint, shapes=False)
    except CheckpointError as exc:
        raise Decline(str(exc), environment=True) from exc


def expected_params_for(ws: Workspace) -> dict[str, dict]:
    """Workspace.expected_params, else the output of the profile's expected_params hook."""
    if ws.expected_params:
        return ws.expected_params
    hook = ws.profile.expected_params if ws.profile else None
    if not hook or ws.checkpoint is None:
        raise Decline(
            "no expected parameter names: set Workspace.expected_params or the profile's expected_params hook"
        )
    with LocalSandbox(ws.root) as sandbox:
        try:
            return expected_from_hook(sandbox, hook, ws.checkpoint, timeout=HOOK_TIMEOUT_S)
        except CheckpointError as exc:
            raise Decline(str(exc)) from exc


def _candidate_files(failure: Failure, ws: Workspace) -> list[str]:
    """Repo-relative .py files: the failure's file, its traceback frames (innermost first), the profile's loaders."""
    seen: list[str] = []
    raw = [failure.file or "", *[m.group("path") for m in _FRAME.finditer(failure.excerpt or "")][::-1]]
    for path in raw:
        if not path.endswith(".py"):
            continue
        p = Path(path)
        if p.is_absolute():
            try:
                p = p.resolve().relative_to(ws.root)
            except ValueError:
                continue
        if (ws.root / p).is_file() and str(p) not in seen:
            seen.append(str(p))
    for pattern in ws.profile.model_loaders if ws.profile else []:
        for p in sorted(ws.root.glob(pattern)):
            rel = str(p.relative_to(ws.root))
            if rel not in seen:
                seen.append(rel)
    return seen


def find_loader(failure: Failure, ws: Workspace, ckpt: Checkpoint) -> LoaderFile:
    """The load_weights site: the traceback's file first, else the class named in config.json architectures."""
    archs = [a for a in ckpt.config.get("architectures") or [] if isinstance(a, str)]
    found: list[LoaderFile] = []
    for rel in _candidate_files(failure, ws):
        text = ws.read(rel) or ""
        try:
            sites = find_loader_sites(text)
        except SyntaxError:
            continue
        found += [LoaderFile(rel, text, s) for s in sites]
    by_arch = [f for f in found if f.site.class_name in archs]
    if by_arch:
        return by_arch[0]
    if found and (failure.file == found[0].rel or len({f.rel for f in found}) == 1):
        return found[0]
    raise Decline(
        "cannot find the model's load_weights (`for name, ... in weights:`): no traceback frame "
        f"and no class named {archs or 'in config.json architectures'} in the profile's model_loaders"
    )


def plan_rules(loader: LoaderFile, names: list[str], expected: dict) -> list[PrefixRule] | None:
    """The rules to write, or None when the file's existing table already loads every tensor."""
    site = loader.site
    existing = read_remap_table(loader.text)
    call_present = f"{site.name_var} = {REMAP_FUNCTION}({site.name_var})" in loader.text
    if existing is not None and call_present and not remap_problems(existing, names, expected, site):
        return None
    try:
        rules = derive_rules(names, expected, site)
    except RemapError as exc:
        runtime = (
            (
                f" ({', '.join(site.runtime_mappings)} is built at run time and cannot be replayed "
                f"statically; its names may explain the rest)"
            )
            if site.runtime_mappings
            else ""
        )
        raise Decline(f"{loader.rel}: {exc}{runtime}") from exc
    if not rules:
        raise Decline(
            "checkpoint names already match the expected params through the loader's stacked "
            "mapping: the failure is not a name mismatch"
        )
    return rules


class WeightNameFixer:
    """Remap checkpoint name prefixes to registered parameter names in load_weights."""

    family = FAMILY
    kinds: tuple[str, ...] = ("weight_name",)

    def propose(self, failure: Failure, ws: Workspace) -> Proposal | None:
        if failure.kind not in self.kinds:
            return None
        ckpt = read_checkpoint(ws)
        expected = expected_params_for(ws)
        loader = find_loader(failure, ws, ckpt)
        if read_remap_table(loader.text) is None:
            fix = table_fix(loader.text, loader.site, ckpt.names, expected)
            if fix is not None:
                return self._table_entries(failure, loader, fix, len(ckpt.names), len(expected))
        rules = plan_rules(loader, ckpt.names, expected)
        if rules is None:
            return None
        new = with_remap(loader.text, loader.site, rules, describe_layout(rules, ckpt.num_hidden_layers))
        table = "; ".join(f"{r.checkpoint or '<root>'}.* -> {r.framework or '<root>'}.*" for r in rules)
        stacked = ", ".join(f"{s}->{p}" for p, s in loader.site.mappings) or "none"
        rationale = (
            f"{loader.rel}: {loader.site.class_name}.load_weights receives checkpoint names that are "
            f"not the registered parameter names. Smallest consistent prefix remap, most specific "
            f"first: {table}. Derived from the checkpoint index ({len(ckpt.names)} tensors) and the "
            f"{len(expected)} expected params, only from names unmatched on both sides; with the "
            f"loader's stacked mapping ({stacked}) every expected param is produced and no tensor "
            f"is dropped. The table is module-level with one rename line at the top of the loop."
        )
        return make_proposal(failure, self.family, {loader.rel: (loader.text, new)}, rationale)

    def _table_entries(
        self, failure: Failure, loader: LoaderFile, fix: TableFix, tensors: int, params: int
    ) -> Proposal | None:
        """The entries the loader's own table lacks, added to it (None when it lacks none)."""
        if not fix.entries:
            return None
        table = find_loader_table(loader.text, loader.site)
        if table is None:
            return None
        new = insert_entries(loader.text, table, fix.entries)
        t, p = fix.pattern.checkpoint, fix.pattern.framework
        added = "; ".join(f"({a!r}, {b!r}): {t}{a}.* -> {p}{b}.*" for a, b in fix.entries)
        rationale = (
            f"{loader.rel}: {loader.site.class_name}.load_weights already renames checkpoint names "
            f"through {fix.table.function}(), which reads the table {fix.table.table}; its entries "
            f"map {t}<a>.* to {p}<b>.*. After that table, checkpoint tensors remain that load into no "
            f"registered param; the one missing entry pattern is added: {added}. Replayed over the "
            f"checkpoint index ({tensors} tensors) with the function's fallback, every one of the "
            f"{params} expected params is produced and no tensor is dropped. Everything else that goes "
            f"through {fix.table.function}() (e.g. quantization exclusions) gets the same fix."
        )
        return make_proposal(failure, self.family, {loader.rel: (loader.text, new)}, rationale)

    def check(self, proposal: Proposal, ws: Workspace) -> CheckResult:
        """The cheap check before any server launch: the patched table replayed over the checkpoint index."""
        return check_remap(proposal, ws)


def patched_sources(proposal: Proposal, ws: Workspace) -> dict[str, str]:
    """The proposal's files after `git apply` on a scratch copy (the repo is not touched)."""
    with tempfile.TemporaryDirectory(prefix="rocport-check-") as tmp:
        for rel in proposal.files:
            src, dst = ws.root / rel, Path(tmp, rel)
            dst.parent.mkdir(parents=True, exist_ok=True)
            if src.is_file():
                dst.write_bytes(src.read_bytes())
        done = gitops.apply(Path(tmp), proposal.diff, "--unsafe-paths")
        if done.returncode != 0:
            raise ValueError(f"the diff does not apply: {done.stderr.strip().splitlines()[:1]}")
        return {rel: Path(tmp, rel).read_text(encoding="utf-8") for rel in proposal.files}


def check_remap(proposal: Proposal, ws: Workspace) -> CheckResult:
    """Replay the patched remap table over the checkpoint index: every expected param produced, none dropped."""
    start = time.monotonic()
    try:
        sources = patched_sources(proposal, ws)
        ckpt, expected = read_checkpoint(ws), expected_params_for(ws)
    except (ValueError, Decline) as exc:
        return CheckResult("weight_remap", False, str(exc), duration_s=time.monotonic() - start)
    for rel, text in sources.items():
        sites = find_loader_sites(text)
        if not sites:
            continue
        site = sites[0]
        rules = read_remap_table(text)
        if rules is None:  # no table of rocport's: the loader's own table, as patched
            rules = replay_table(text, site, ckpt.names, expected)
        if rules is None:
            continue
        problems = remap_problems(rules, ckpt.names, expected, site)
        ok = not problems
        detail = (
            f"{rel}: {len(ckpt.names)} checkpoint tensors -> all {len(expected)} expected params"
            if ok
            else f"{rel}: " + "; ".join(problems)
        )
        return CheckResult("weight_remap", ok, detail, duration_s=time.monotonic() - start)
    return CheckResult(
        "weight_remap", False, "the patched files hold no remap table", duration_s=time.monotonic() - start
    )


register(WeightNameFixer())
