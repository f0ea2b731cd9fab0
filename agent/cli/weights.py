"""`rocport weights CHECKPOINT [--expected FILE] [--json]`: checkpoint names vs framework params."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from agent.cli.app import app, fail
from agent.profiles import ProfileError, load_profile
from sandboxes.base import SandboxError
from sandboxes.local import LocalSandbox
from tools.weights import (
    Checkpoint,
    CheckpointError,
    RemapError,
    WeightReport,
    check_rules,
    compare,
    derive_remap,
    expected_from_hook,
    load_checkpoint,
    load_expected,
)
from tools.weights.compare import EXAMPLES_PER_GROUP
from tools.weights.framework_check import FrameworkCheck, check_framework, find_model_file
from tools.weights.loader_source import find_loader_sites
from tools.weights.meta_answer import META_MODEL, run_meta_model


def _mappings(model_file: Path | None) -> tuple[list[tuple[str, str]], list[str]]:
    if model_file is None:
        return [], []
    try:
        sites = find_loader_sites(model_file.read_text(encoding="utf-8"))
    except (OSError, SyntaxError) as exc:
        raise fail(f"{model_file}: cannot read the model file ({exc}); pass a Python model file") from exc
    if not sites:
        raise fail(f"{model_file}: no load_weights with `for name, ... in weights:`; pass the model file")
    return sites[0].mappings, sites[0].skip


def _expected_from_profile(name: str, repo: Path, checkpoint: Path) -> dict:
    prof = load_profile(name)
    if not prof.expected_params:
        raise fail(f"profile {prof.name} has no expected_params command; pass --expected FILE")
    with LocalSandbox(repo) as sandbox:
        return expected_from_hook(sandbox, prof.expected_params, checkpoint.resolve())


def _suggest(ckpt: Checkpoint, expected: dict, model_file: Path | None) -> dict:
    mappings, skip = _mappings(model_file)
    # what is still wrong once the loader's own stacked mapping (q/k/v -> qkv_proj) is applied
    stacked = check_rules([], ckpt.names, expected, mappings, skip) if mappings else None
    try:
        remap = derive_remap(ckpt.names, expected, mappings, skip)
    except RemapError as exc:
        return {"rules": [], "error": str(exc), "after_stacked_mapping": stacked}
    return {
        "rules": [[r.checkpoint, r.framework] for r in remap.rules],
        "renamed": len(remap.renamed),
        "after_stacked_mapping": stacked,
    }


def _print_summary(console: Console, ckpt: Checkpoint) -> None:
    console.print(
        f"[bold]{ckpt.root}[/]: {len(ckpt.tensors)} tensors in {len(ckpt.shards)} shard(s)"
        + (f", num_hidden_layers={ckpt.num_hidden_layers}" if ckpt.num_hidden_layers else "")
    )
    dtypes = Counter(t.dtype for t in ckpt.tensors.values() if t.dtype)
    if dtypes:
        console.print("dtypes: " + ", ".join(f"{d} x{n}" for d, n in dtypes.most_common()))


def _print_report(console: Console, report: WeightReport, suggestion: dict | None) -> None:
    style = "green" if report.ok else "red"
    console.print(
        f"[{style}]{report.matched}/{report.num_expected} expected params found[/]; "
        f"{len(report.missing)} missing, {len(report.unexpected)} unexpected, "
        f"{len(report.mismatched)} shape/dtype mismatches"
    )
    if report.ok:
        return
    table = Table(show_lines=False)
    table.add_column("submodule", overflow="fold")
    for col in ("missing", "unexpected", "mismatched"):
        table.add_column(col, justify="right")
    table.add_column("examples", overflow="fold")
    for g in report.groups:
        examples = (g.missing or g.unexpected or [m.name for m in g.mismatched])[:EXAMPLES_PER_GROUP]
        table.add_row(
            g.group, str(len(g.missing)), str(len(g.unexpected)), str(len(g.mismatched)), "\n".join(examples)
        )
    console.print(table)
    for m in report.mismatched[:10]:
        console.print(
            f"  {m.name}: checkpoint {m.checkpoint_shape} {m.checkpoint_dtype} vs "
            f"framework {m.expected_shape} {m.expected_dtype}"
        )
    if suggestion and suggestion.get("after_stacked_mapping") is not None:
        left = suggestion["after_stacked_mapping"]
        console.print(
            "through the loader's stacked mapping: " + ("; ".join(left) if left else "every tensor loads")
        )
    if suggestion and suggestion["rules"]:
        console.print("[bold]prefix remap that loads every tensor[/] (checkpoint -> framework):")
        for old, new in suggestion["rules"]:
            console.print(f"  {old or '<root>'} -> {new or '<root>'}")
    elif suggestion:
        console.print(f"no prefix remap: {suggestion['error']}")


@app.command()
def weights(
    checkpoint: Path = typer.Argument(..., help="Checkpoint directory, index JSON or .safetensors file."),
    expected: Path | None = typer.Option(
        None,
        "--expected",
        help="JSON of the framework's expected params ({name: {shape, dtype}} or a list of names).",
    ),
    profile: str | None = typer.Option(
        None,
        "--profile",
        help="Get expected params from this framework profile's expected_params command, run in --repo.",
    ),
    repo: Path = typer.Option(Path("."), "--repo", help="Framework checkout the profile command runs in."),
    model_file: Path | None = typer.Option(
        None,
        "--model-file",
        help="Model file whose load_weights stacked mapping (q/k/v -> qkv) the remap suggestion uses.",
    ),
    names_only: bool = typer.Option(False, "--names-only", help="Read the index only (no shapes)."),
    framework_python: str = typer.Option(
        "python3",
        "--framework-python",
        envvar="ROCPORT_FRAMEWORK_PYTHON",
        help="Python of a venv with torch and the framework from PyPI, for "
        "profiles that build the model class on the meta device.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print machine-readable JSON."),
) -> None:
    """Read tensor names/dtypes/shapes from safetensors headers and compare with expected params."""
    try:
        ckpt = load_checkpoint(checkpoint, shapes=not names_only)
        prof = load_profile(profile) if profile and not expected else None
        if prof is not None and prof.meta_params and not prof.expected_params:
            _require_model_file(repo, prof.model_loaders, ckpt)
            answer = run_meta_model(framework_python, prof.meta_params, checkpoint, repo.resolve())
            _framework_report(check_framework(repo.resolve(), prof.model_loaders, ckpt, answer), as_json)
            return
        want = load_expected(expected) if expected else None
        if want is None and profile:
            want = _expected_from_profile(profile, repo, checkpoint)
    except (CheckpointError, ProfileError, SandboxError) as exc:
        raise fail(str(exc)) from exc
    report = compare(ckpt, want) if want is not None else None
    suggestion = (
        _suggest(ckpt, want, model_file)
        if want is not None and report is not None and not report.ok
        else None
    )
    if as_json:
        out: dict = {
            "checkpoint": str(ckpt.root),
            "tensors": len(ckpt.tensors),
            "shards": len(ckpt.shards),
            "num_hidden_layers": ckpt.num_hidden_layers,
        }
        if report is not None:
            out["report"] = report.to_dict()
            out["remap"] = suggestion
        else:
            out["names"] = {n: {"dtype": t.dtype, "shape": t.shape} for n, t in ckpt.tensors.items()}
        typer.echo(json.dumps(out, indent=1))
    else:
        console = Console()
        _print_summary(console, ckpt)
        if report is not None:
            _print_report(console, report, suggestion)
    if report is not None and not report.ok:
        raise typer.Exit(1)


def _require_model_file(repo: Path, globs: list[str], ckpt: Checkpoint) -> None:
    """Fail fast (before the model class is built) when the checkout has no file for the architecture."""
    archs = [a for a in ckpt.config.get("architectures") or [] if isinstance(a, str)]
    if not archs:
        raise fail(
            f"{ckpt.root}/config.json names no architectures; the framework check needs the model class"
        )
    if not any(find_model_file(repo, globs, a) for a in archs):
        raise fail(
            f"{repo}: no file matching {', '.join(globs)} defines {' or '.join(archs)}; "
            f"pass --repo with a checkout of the framework"
        )


def _framework_report(result: FrameworkCheck, as_json: bool) -> None:
    """Print the real-framework check; exit 1 when a tensor would be dropped or a param left unloaded."""
    if as_json:
        typer.echo(json.dumps(_framework_dict(result), indent=1))
    else:
        console = Console()
        console.print(f"expected names: {result.source}")
        if result.blocked:
            console.print(f"  blocked: {result.blocked.get('error')} at {result.blocked.get('where')}")
        for m in result.models:
            head = f"{m.cls} ({m.file}): {m.loaded} params loaded" + (
                f" of {m.expected}" if m.expected else ""
            )
            console.print(f"[{'green' if not (m.problems or m.never_loaded) else 'red'}]{head}[/]")
            if m.error:
                console.print(f"  cannot replay: {m.error}")
            for o in m.problems[:10]:
                via = "; ".join(f"line {line}: {a} -> {b}" for line, a, b in o.rewrites)
                console.print(f"  {o.status}: {o.name} -> {o.target} (line {o.line}; {via or 'no rename'})")
            for n in m.never_loaded[:10]:
                console.print(f"  never loaded: {n}")
            for r in m.fix:
                console.print(
                    f"  fix: rename checkpoint prefix {r.checkpoint} -> {r.framework} at the top of the "
                    f"load_weights loop"
                )
            if m.assumed_false:
                console.print(f"  assumed off (run-time flags): lines {', '.join(map(str, m.assumed_false))}")
        for x in result.exclusion_misses:
            console.print(
                f"[red]exclusion {x.entry!r} keeps {x.checkpoint_module} unquantized, but the framework "
                f"checks {x.framework_prefix}[/]: add it to the list, or rename the list like the loader"
            )
    if not result.ok:
        raise typer.Exit(1)


def _framework_dict(result: FrameworkCheck) -> dict:
    return {
        "source": result.source,
        "blocked": result.blocked,
        "ok": result.ok,
        "models": [
            {
                "class": m.cls,
                "file": m.file,
                "expected": m.expected,
                "loaded": m.loaded,
                "problems": [vars(o) for o in m.problems],
                "never_loaded": m.never_loaded,
                "assumed_false": m.assumed_false,
                "loop_file": m.loop_file,
                "loop_class": m.loop_class,
                "fix": [[r.checkpoint, r.framework] for r in m.fix],
                "error": m.error,
            }
            for m in result.models
        ],
        "exclusion_misses": [vars(x) for x in result.exclusion_misses],
        "meta_model": str(META_MODEL),
    }
