"""Help that reads like a manual: metavars in capitals (RUN_ID, PATH) instead of `{run_id}`, nothing
after a flag that takes no value, and examples under every command. Applied once to the click command
tree typer builds, so each command module stays plain."""

from __future__ import annotations

from typing import Any

EX = "agent/sweep/examples/tinyserve-nightly.yaml"
EXAMPLES: dict[str, list[str]] = {
    "port": [
        "rocport port -c job.yaml -c target.arch=gfx950",
        "rocport port -c job.yaml --until build",
        "rocport port --resume RUN_ID --approve",
    ],
    "runs": ["rocport runs --limit 5", "rocport runs --format json"],
    "show": ["rocport show RUN_ID", "rocport show RUN_ID --format json"],
    "report": ["rocport report RUN_ID --html", "rocport report RUN_ID --show"],
    "pr": [
        "rocport pr RUN_ID",
        "rocport pr RUN_ID --push https://github.com/YOU/sglang.git --open --repo sgl-project/sglang --signoff",
        "rocport pr RUN_ID --open --repo OWNER/NAME --dry-run",
    ],
    "tune": [
        "rocport tune RUN_ID --price-per-gpu-hour 2.5 --reference B200:3192:6.5",
        "rocport tune RUN_ID --show",
    ],
    "demo": ["rocport demo", "rocport demo --task cub_rmsnorm --workdir /tmp/demo"],
    "eval": ["rocport eval", "rocport eval glm52_mi355x -s rules -s naive --output eval.json"],
    "scan": ["rocport scan ~/src/sglang --profile sglang", "rocport scan CHECKOUT -f sarif -o scan.sarif"],
    "fix": [
        "rocport fix CHECKOUT --log build.log --dry-run",
        "rocport fix CHECKOUT --from-scan --arch gfx942",
    ],
    "diagnose": ["rocport diagnose build.log --repo CHECKOUT", "rocport diagnose server.log --format json"],
    "weights": ["rocport weights CKPT_DIR --names-only", "rocport weights CKPT_DIR --expected params.json"],
    "doctor": ["rocport doctor", "rocport doctor --json"],
    "image": ["rocport image list", "rocport image build 6.4"],
    "image build": ["rocport image build 6.4", "rocport image build 5.7 --tag my/rocm-build:5.7"],
    "image list": ["rocport image list", "rocport image list --format plain"],
    "image check": ["rocport image check", "rocport image check rocport/rocm-build:6.4 --arch gfx942"],
    "sweep": [f"rocport sweep plan {EX}", f"rocport sweep run {EX} --fail-on error"],
    "sweep plan": [f"rocport sweep plan {EX}", f"rocport sweep plan {EX} --format plain"],
    "sweep run": [
        f"rocport sweep run {EX} --fail-on error",
        "rocport sweep run nightly.yaml --db PATH --jobs 2",
    ],
    "sweep report": [f"rocport sweep report {EX} --html dashboard.html --fail-on error,regression"],
    "bench": [
        "rocport bench --base-url http://127.0.0.1:30000",
        "rocport bench --base-url URL --preset glm52-mi355x --output a.json",
    ],
    "bench compare": ["rocport bench compare a.json b.json"],
}


def _epilog(lines: list[str]) -> str:
    # one paragraph per example: neither rich nor plain click joins them into one line
    return "Examples:\n\n" + "\n\n".join(f"  {line}" for line in lines)


def _metavar(param: Any) -> str | None:
    desc = getattr(param, "type_descriptor", None)
    choice = desc.is_choice if desc is not None else type(getattr(param, "type", None)).__name__ == "Choice"
    if param.metavar is not None:
        return param.metavar
    if choice:
        choices = desc.choices if desc is not None else param.type.choices
        return "|".join(str(getattr(c, "value", c)) for c in choices or ())
    if param.param_type_name == "argument":
        return param.name.upper() + ("..." if param.nargs != 1 else "")
    if getattr(param, "is_flag", False) or getattr(param, "count", False):
        return ""
    return param.name.upper()


HELP_ORDER = ("port", "runs", "show", "report", "pr", "tune", "demo", "eval", "sweep", "fix", "scan")
"""`rocport --help` lists the main job first, then what it produces, then the parts (the rest keep
the order their modules registered them in: imports are sorted, so that order says nothing)."""


def apply(command: Any, path: str = "") -> Any:
    """Set metavars, examples and the help flag's bare display on `command` and its subcommands."""
    if not path and isinstance(getattr(command, "commands", None), dict):
        first = {n: command.commands[n] for n in HELP_ORDER if n in command.commands}
        command.commands = {**first, **{n: c for n, c in command.commands.items() if n not in first}}
    for param in command.params:
        param.metavar = _metavar(param)
        if param.param_type_name == "argument":  # typer shows `{RUN_ID}` and `<str>` otherwise
            shown = param.metavar if param.required else f"[{param.metavar}]"
            param._usage_display_name = lambda shown=shown: shown
            param.display_type_rich = lambda ctx: None
    if path in EXAMPLES and not command.epilog:
        command.epilog = _epilog(EXAMPLES[path])
    original = command.get_help_option

    def help_option(ctx: Any, _orig=original):
        opt = _orig(ctx)
        if opt is not None:
            opt.metavar = ""
        return opt

    command.get_help_option = help_option
    for name, sub in getattr(command, "commands", {}).items():
        apply(sub, f"{path} {name}".strip())
    return command
