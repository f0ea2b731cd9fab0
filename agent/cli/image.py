"""`rocport image build|list`: the local ROCm build images."""

from __future__ import annotations

from dataclasses import asdict

import typer
from rich.console import Console

from agent.cli.app import app, fail
from agent.cli.output import FORMAT_OPTION, Format, print_listing
from sandboxes.base import SandboxError
from sandboxes.images import DEFAULT_RECIPE, RECIPES, ImageBuildError, build_image, get_recipe
from sandboxes.images.check import LIBRARY, compile_sample
from sandboxes.images.listing import list_images

image_app = typer.Typer(help="Build and list ROCm build images.", no_args_is_help=True)
app.add_typer(image_app, name="image")


@image_app.command("build")
def build(
    recipe: str = typer.Argument(DEFAULT_RECIPE, help=f"Which image: {', '.join(sorted(RECIPES))}."),
    tag: str = typer.Option(None, help="Tag to give the image (default rocport/rocm-build:<recipe>)."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Print mmdebstrap's output."),
) -> None:
    """Build a ROCm build image offline from Debian packages (mmdebstrap + docker import)."""
    try:
        chosen = get_recipe(recipe)
    except ValueError as exc:
        raise fail(str(exc)) from None
    console = Console(stderr=True)
    with console.status(f"building {chosen.tag} from Debian {chosen.suite}") as status:

        def log(line: str) -> None:
            if verbose:
                console.print(line, markup=False, highlight=False)
            elif line.startswith("I: "):
                status.update(f"{chosen.tag}: {line[3:][:100]}")

        try:
            built = build_image(chosen, tag=tag, log=log)
        except ImageBuildError as exc:
            raise fail(str(exc)) from None
    facts = built.facts
    typer.echo(
        f"built {built.tag} in {built.duration_s:.0f}s: {facts.get('clang_version', '?')}, "
        f"HIP {facts.get('hip_version', '?')}, --offload-arch {facts.get('offload_archs', '?')}"
        f" (hipcub headers: {facts.get('hipcub_archs') or 'none'})"
    )


@image_app.command("list")
def list_(
    as_json: bool = typer.Option(False, "--json", help="Print the images as JSON (as --format json)."),
    fmt: Format = FORMAT_OPTION,
) -> None:
    """Local rocport build images and the official ROCm images (sglang, vLLM, rocm/dev-ubuntu)."""
    rows = list_images()
    if as_json:
        fmt = Format.json
    caption = (
        ""
        if any(r.kind == "local build" for r in rows)
        else "no local build image: run `rocport image build`"
    )
    print_listing(
        ["image", "kind", "ROCm", "--offload-arch", "here", "note"],
        [
            [r.image, r.kind, r.rocm, ", ".join(r.targets), "yes" if r.present else "pull", r.note]
            for r in rows
        ],
        fmt,
        title="ROCm images",
        records=[asdict(r) for r in rows],
    )
    if caption and fmt is Format.table:
        typer.echo(caption)


@image_app.command("check")
def check(
    image: str = typer.Argument(RECIPES[DEFAULT_RECIPE].tag, help="Image to check."),
    arch: list[str] = typer.Option(None, "--arch", help="Target(s); default: those the image records."),
) -> None:
    """Compile rocport's sample HIP kernel into a shared library inside IMAGE (no network)."""
    try:
        outcome = compile_sample(image, arch or None)
    except SandboxError as exc:
        raise fail(str(exc)) from None
    if not outcome.ok:
        typer.echo(outcome.result.output.rstrip(), err=True)
        missing = sorted(set(outcome.archs) - set(outcome.embedded_archs))
        raise fail(
            f"in-container compile in {image} failed (exit {outcome.result.returncode}"
            f"{', no code object for ' + ', '.join(missing) if outcome.result.ok else ''})",
            code=1,
        )
    typer.echo(
        f"in-container ROCm compile OK: {image} built {LIBRARY} ({outcome.library_bytes} bytes) "
        f"with code objects for {', '.join(outcome.embedded_archs)} "
        f"in {outcome.result.duration_s:.1f}s"
    )
