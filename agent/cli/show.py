"""`rocport show RUN_ID`: a run's trajectory, step by step, the way an agent trajectory viewer shows one:
each phase, the commands it ran, what the diagnosis found, each patch tried and its fate, the verdict."""

from __future__ import annotations

import json

import typer

from agent.cli.app import app
from agent.cli.output import FORMAT_OPTION, Format, console, print_listing

_QUIET = {"event", "ts", "run_id", "counters", "signatures", "checks", "patches"}


def describe(event: dict) -> str:
    """One line for an event: the progress display's wording where it has one, else its fields."""
    from agent.loop.progress import _SHOWN, one_line

    name = event.get("event", "")
    if name in ("command", "build_started", "serve_started"):
        return f"$ {one_line(event.get('cmd', ''))}"
    if name == "phase":
        return f"iteration {event.get('iteration', 0)}"
    shown = _SHOWN.get(name)
    if shown is not None:
        try:
            return shown(event)
        except (KeyError, TypeError, ValueError):  # an older run's event with other fields
            pass
    return ", ".join(f"{k} {v}" for k, v in event.items() if k not in _QUIET and v not in (None, "", [], {}))


@app.command()
def show(
    run_id: str = typer.Argument(..., help="A run id from `rocport runs`."), fmt: Format = FORMAT_OPTION
) -> None:
    """Print a run's trajectory: phases, commands, diagnoses, patches kept or reverted, the verdict."""
    from agent.cli.pr import run_view

    view = run_view(run_id)
    events = view.events
    if fmt is Format.json:
        typer.echo(json.dumps(events, indent=2, default=str))
        return
    t0 = events[0]["ts"] if events else 0
    rows, step = [], 0
    for e in events:
        name = e.get("event", "")
        if name == "phase":
            step += 1
        rows.append(
            [
                f"+{e.get('ts', t0) - t0:.1f}s",
                f"{step}",
                name if name != "phase" else f"▶ {e['phase']}",
                describe(e),
            ]
        )
    s = view.state
    out = console()
    if fmt is Format.table:
        out.print(
            f"[bold]run {view.run_id}[/bold]: {s.get('status', '?')} — {s.get('stop_reason', '')}",
            highlight=False,
        )
    print_listing(["at", "step", "event", "what"], rows, fmt, out=out)
    if fmt is Format.table:
        c = s.get("counters", {})
        out.print(
            f"builds {c.get('builds', 0)}, unit compiles {c.get('unit_compiles', 0)}, launches "
            f"{c.get('launches', 0)}, LLM tokens {c.get('tokens_in', 0) + c.get('tokens_out', 0)}; "
            f"logs in {view.path / 'logs'}",
            highlight=False,
        )
