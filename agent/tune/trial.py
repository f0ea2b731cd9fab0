"""Launch one candidate (tools/serve.running_server), probe it, benchmark it (tools/bench).

The probe is one short benchmark with its own prompts; when the probe's output tok/s, even raised by
the slack, stays under the incumbent's probe, the candidate cannot win and is stopped without its
full measurement (measure.py: the workload repeated, medians kept). Every benchmark's raw JSON is
kept beside the results.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from agent.tune.candidates import SPLIT, Candidate, launch_args, launch_env, shell_line
from agent.tune.measure import Measurement, measure
from agent.tune.spec import TuneSpace
from tools.bench import BenchConfigError, Workload
from tools.serve import ServeError, launch_command, running_server
from tools.tune.records import Trial

if TYPE_CHECKING:
    from agent.profiles import LaunchSpec
    from sandboxes.base import Sandbox


@dataclass
class TrialContext:
    """Everything a launch needs that does not change between candidates."""

    sandbox: Sandbox
    launch: LaunchSpec
    """The profile's LaunchSpec."""
    space: TuneSpace
    base_env: dict[str, str]
    model_path: str
    model_name: str
    workload: Workload
    max_concurrency: int
    probe_prompts: int
    slack: float
    out_dir: Path
    slo_ttft_ms: float | None = None
    slo_tpot_ms: float | None = None
    repeats: int = 3
    launches: int = 0


def settings_of(cand: Candidate) -> dict:
    return {SPLIT: cand.split.label(), **dict(cand.values)}


def candidate_command(ctx: TrialContext, cand: Candidate, port: int = 30000) -> tuple[str, dict]:
    """(launch command on `port`, environment) of a candidate: what a user runs to reproduce it."""
    cmd = launch_command(
        _template(ctx, cand), model_path=ctx.model_path, port=port, tp=cand.split.tp, dp=cand.split.dp
    )
    return cmd, launch_env(ctx.space, cand)


def _template(ctx: TrialContext, cand: Candidate) -> str:
    return f"{ctx.launch.command} {launch_args(ctx.space, cand)}".strip()


def _measure(
    ctx: TrialContext, base_url: str, model: str, workload: Workload, repeats: int, name: str
) -> Measurement:
    return measure(
        base_url,
        model,
        workload,
        ctx.max_concurrency,
        repeats,
        out_dir=ctx.out_dir,
        name=name,
        slo_ttft_ms=ctx.slo_ttft_ms,
        slo_tpot_ms=ctx.slo_tpot_ms,
    )


def evaluate(ctx: TrialContext, cand: Candidate, incumbent: Trial | None, probe: bool = True) -> Trial:
    """Launch `cand` once; probe, maybe stop early, then the full benchmark; the server is always stopped.

    Without `probe` (exhaustive search, reruns) only the full benchmark runs."""
    cmd, env = candidate_command(ctx, cand)
    trial = Trial(
        key=cand.key(), settings=settings_of(cand), gpus=cand.split.gpus, command=shell_line(cmd, env)
    )
    t0 = time.monotonic()
    ctx.launches += 1
    slug = f"{ctx.launches:02d}-{cand.key().replace(' ', '_').replace('=', '-')}"
    server = None
    try:
        with running_server(
            ctx.sandbox,
            _template(ctx, cand),
            model_path=ctx.model_path,
            tp=cand.split.tp,
            dp=cand.split.dp,
            health_path=ctx.launch.health_path,
            models_path=ctx.launch.models_path,
            ready_timeout=ctx.launch.ready_timeout_s,
            smoke_prompt=ctx.launch.smoke_prompt,
            env={**ctx.base_env, **env},
            name=f"tune-{ctx.launches}",
        ) as server:
            if not server.ok:
                trial.status = "failed"
                return trial
            model = ctx.model_name or server.model
            if probe:  # its own prompts (seed - 1): the full measurement must not find them cached
                short_load = replace(ctx.workload, num_prompts=ctx.probe_prompts, seed=ctx.workload.seed - 1)
                trial.probe_tok_s = _measure(
                    ctx, server.base_url, model, short_load, 1, f"{slug}-probe"
                ).output_tok_s
            if (
                probe
                and incumbent
                and incumbent.probe_tok_s
                and trial.probe_tok_s is not None
                and trial.probe_tok_s * (1 + ctx.slack) < incumbent.probe_tok_s
            ):
                trial.status = "stopped early"
                trial.reason = (
                    f"probe {trial.probe_tok_s:.0f} tok/s x {1 + ctx.slack:.2f} < incumbent's "
                    f"{incumbent.probe_tok_s:.0f}"
                )
                return trial
            _fill(trial, _measure(ctx, server.base_url, model, ctx.workload, ctx.repeats, slug), ctx)
    except (ServeError, BenchConfigError, OSError) as exc:
        trial.status, trial.reason = "failed", str(exc)
    finally:
        trial.wall_s = round(time.monotonic() - t0, 2)
    if trial.status == "failed" and not trial.reason and server is not None:
        first = server.failures[0].message if server.failures else ""
        trial.reason = "; ".join(p for p in (server.reason, first) if p)
    return trial


def _fill(trial: Trial, m: Measurement, ctx: TrialContext) -> None:
    """The full measurement's medians into the trial."""
    trial.status = "measured"
    trial.output_tok_s, trial.total_tok_s, trial.repeats = m.output_tok_s, m.total_tok_s, m.repeats
    trial.ttft_ms, trial.tpot_ms = m.ttft_ms, m.tpot_ms
    trial.valid = m.valid
    if not m.valid:
        trial.reason = "; ".join(m.reasons)
    trial.meets_slo = (ctx.slo_ttft_ms is None or (trial.ttft_ms or 0) <= ctx.slo_ttft_ms) and (
        ctx.slo_tpot_ms is None or (trial.tpot_ms or 0) <= ctx.slo_tpot_ms
    )
    trial.bench_json = m.paths[0] if m.paths else None
