"""`rocport scan`'s argument and options, declared once: the typer command (agent/cli/scan.py) is
built from this table, and so is the parser a `rocport scan` process tries first (scan_argv.py),
which needs neither typer nor pydantic. Nothing here imports either."""

from __future__ import annotations

from collections import namedtuple

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (tools/__init__.py)
if TYPE_CHECKING:
    from typing import Any, NamedTuple

    class _ScanOptionFields(NamedTuple):
        dest: str
        """The scan function's parameter."""
        flags: tuple[str, ...]
        """Its spellings, long first (`--format`, `-f`); for an on/off switch the `on` spelling."""
        help: str
        kind: str
        """`value` (one value), `many` (repeatable, a list), `flag` (present or not), `switch` (on/off)."""
        default: Any = None
        off: str | None = None
        """A switch's `off` spelling (`--no-cache`)."""
        choices: tuple[str, ...] = ()
        """The values a `value` option takes, when it is a choice."""
        minimum: int | None = None
        """Set for a whole-number option: its smallest value."""
        is_path: bool = False
        """Its value is a file path."""

else:
    _ScanOptionFields = namedtuple(  # noqa: PYI024
        "ScanOption",
        ("dest", "flags", "help", "kind", "default", "off", "choices", "minimum", "is_path"),
        defaults=(None, None, (), None, False),
    )


class ScanOption(_ScanOptionFields):
    """One option of `rocport scan` (a named tuple: a third of a frozen dataclass's start-up cost)."""

    __slots__ = ()

    def declarations(self) -> tuple[str, ...]:
        """What typer.Option takes: the spellings, an on/off pair as one `--on/--off`."""
        if self.kind == "switch":
            return (f"{self.flags[0]}/{self.off}", *self.flags[1:])
        return self.flags


PATH_HELP = "Repo checkout (or one source file) to scan."
FORMATS = ("table", "json", "sarif")

OPTIONS: tuple[ScanOption, ...] = (
    ScanOption(
        "profile",
        ("--profile", "-p"),
        "Framework profile name (sglang, vllm, tinyserve) or YAML path; "
        "a hipifying profile hides what hipify translates.",
        "value",
    ),
    ScanOption(
        "hipify",
        ("--hipify",),
        "Override: the build runs torch's hipify (default: from the profile).",
        "switch",
        off="--no-hipify",
    ),
    ScanOption("fmt", ("--format", "-f"), "table, json or sarif.", "value", "table", choices=FORMATS),
    ScanOption("output", ("--output", "-o"), "Write the report here, not stdout.", "value", is_path=True),
    ScanOption(
        "jobs",
        ("--jobs", "-j"),
        "Processes to scan with (default: this one and a forked copy per idle core, 8 at most).",
        "value",
        minimum=1,
    ),
    ScanOption(
        "include_vendored",
        ("--include-vendored",),
        "Also scan third_party/, 3rdparty/, vendor/ directories.",
        "flag",
        False,
    ),
    ScanOption(
        "exclude",
        ("--exclude",),
        "Leave out files or directories matching this glob (repeatable); replaces the "
        "profile's default (tests, benchmarks, docs, examples).",
        "many",
    ),
    ScanOption(
        "select",
        ("--select",),
        "Report only this kind (repeatable): cuda_header, warp_size, inline_ptx, ...",
        "many",
    ),
    ScanOption(
        "statistics",
        ("--statistics",),
        "Print counts per kind and fix family instead of every finding.",
        "flag",
        False,
    ),
    ScanOption(
        "cache",
        ("--cache",),
        "Reuse results of files unchanged since the last scan (kept under "
        "$ROCPORT_CACHE_DIR/scan, default ~/.cache/rocport/scan).",
        "switch",
        True,
        off="--no-cache",
    ),
)
BY_DEST = {o.dest: o for o in OPTIONS}
