"""`rocport bench`: a serving benchmark users can trust, and `rocport bench compare A.json B.json`."""

from __future__ import annotations

import json
import os
import random
from dataclasses import replace
from pathlib import Path

import typer
from rich.table import Table

from agent.cli.app import app, fail
from agent.cli.bench_live import BenchProgress, served_model, summary_block, workload_differences
from agent.cli.bench_summary import cell, print_summary
from agent.cli.output import FORMAT_OPTION, Format, print_listing
from agent.cli.output import console as output_console
from tools.bench import (
    BenchConfig,
    BenchConfigError,
    Workload,
    WorkloadError,
    build_plan,
    compare_results,
    load_result,
    preset,
    result_from_run,
    run_benchmark,
)
from tools.bench.compare import validity
from tools.bench.result import BenchResult
from tools.bench.runner import run_async

DEFAULT_LEN = 1024
"""--isl and --osl when neither is given: the random dataset defaults of sglang's bench_serving."""

bench_app = typer.Typer(
    help="Benchmark an OpenAI-compatible server (streaming, token-id prompts).",
    invoke_without_command=True,
    no_args_is_help=False,
)
app.add_typer(bench_app, name="bench")


def _workload(isl, osl, preset_name, num_prompts, prefix_hit, prefix_groups, seed, vocab_size) -> Workload:
    if preset_name:
        wl = preset(preset_name)
        if isl is not None or osl is not None:
            raise WorkloadError("give either --preset or --isl/--osl, not both")
    elif (isl is None) != (osl is None):
        raise WorkloadError(
            "give both --isl N and --osl N (or neither: 1024 and 1024, bench_serving's random "
            "defaults), or --preset NAME"
        )
    else:
        wl = Workload(isl=isl or DEFAULT_LEN, osl=osl or DEFAULT_LEN)
    changes = {
        k: v
        for k, v in (
            ("num_prompts", num_prompts),
            ("prefix_hit", prefix_hit),
            ("prefix_groups", prefix_groups),
            ("vocab_size", vocab_size),
        )
        if v is not None
    }
    if seed is None:
        seed = random.SystemRandom().randrange(2**31)
    return replace(wl, seed=seed, **changes).validate()


@bench_app.callback()
def bench(
    ctx: typer.Context,
    base_url: str = typer.Option(None, "--base-url", help="Server URL, e.g. http://127.0.0.1:30000"),
    model: str = typer.Option(
        None, "--model", help="Model name the server serves (default: the first one GET /v1/models lists)."
    ),
    endpoint: str = typer.Option("completions", "--endpoint", help="completions (token-id prompts) or chat."),
    isl: int = typer.Option(None, "--isl", help="Input tokens per request (default 1024, as bench_serving)."),
    osl: int = typer.Option(None, "--osl", help="Output tokens per request, ignore_eos (default 1024)."),
    preset_name: str = typer.Option(None, "--preset", help="Named workload, e.g. glm52-mi355x."),
    num_prompts: int = typer.Option(None, "--num-prompts", help="Measured requests."),
    max_concurrency: int = typer.Option(64, "--max-concurrency", help="Requests in flight at most."),
    request_rate: float = typer.Option(float("inf"), "--request-rate", help="Poisson arrivals per second."),
    prefix_hit: float = typer.Option(None, "--prefix-hit", help="Target prefix-cache hit rate, e.g. 0.6."),
    prefix_groups: int = typer.Option(None, "--prefix-groups", help="Groups sharing one prefix."),
    prime_rounds: int = typer.Option(1, "--prime-rounds", help="Times each prefix is primed (DP size)."),
    warmup: int = typer.Option(1, "--warmup", help="Warmup requests after priming (not measured)."),
    single_stream: int = typer.Option(0, "--single-stream", help="Extra requests at concurrency 1."),
    slo_ttft_ms: float = typer.Option(None, "--slo-ttft-ms", help="TTFT SLO for goodput."),
    slo_tpot_ms: float = typer.Option(None, "--slo-tpot-ms", help="TPOT SLO for goodput."),
    max_failure_rate: float = typer.Option(0.0, "--max-failure-rate", help="Failures tolerated (0..1)."),
    timeout: float = typer.Option(
        None,
        "--timeout",
        min=0.001,
        help="Seconds per request before it counts as "
        "failed; default 60 s + 10 s per 1k input tokens + 0.5 s per output token.",
    ),
    seed: int = typer.Option(
        None,
        "--seed",
        help="Prompt seed; default: a fresh one per run (recorded in "
        "the JSON), so a rerun never hits the cache of the previous one.",
    ),
    vocab_size: int = typer.Option(None, "--vocab-size", help="Token ids are drawn below this."),
    extra_body: str = typer.Option(
        None,
        "--extra-body",
        help="JSON object merged into every request body, "
        'e.g. \'{"stream_options": {"include_usage": true}}\' for a server that '
        "rejects continuous_usage_stats.",
    ),
    api_key_env: str = typer.Option(
        None,
        "--api-key-env",
        metavar="NAME",
        help="Send the value of this environment variable as the bearer token (none is sent otherwise).",
    ),
    output: Path = typer.Option(None, "--output", help="Write the result JSON here."),
    as_json: bool = typer.Option(False, "--json", help="Print the result JSON instead of the table."),
) -> None:
    """Run a streaming benchmark; see `rocport bench compare` for comparing two results."""
    if ctx.invoked_subcommand is not None:
        return
    if not base_url:
        raise fail(
            "give --base-url URL (and --model NAME, or let GET /v1/models say it), or use "
            "`rocport bench compare A.json B.json`"
        )
    if output and not output.resolve().parent.is_dir():  # checked first: a long run must not end unwritable
        raise fail(f"--output {output}: directory {output.resolve().parent} does not exist; create it first")
    api_key = _api_key(api_key_env)
    try:
        wl = _workload(isl, osl, preset_name, num_prompts, prefix_hit, prefix_groups, seed, vocab_size)
        extra = _extra_body(extra_body)
        model = model or served_model(base_url)
        cfg = BenchConfig(
            extra_body=extra,
            base_url=base_url,
            model=model,
            workload=wl,
            endpoint=endpoint,
            max_concurrency=max_concurrency,
            request_rate=request_rate,
            warmup=warmup,
            prime_rounds=prime_rounds,
            single_stream=single_stream,
            slo_ttft_ms=slo_ttft_ms,
            slo_tpot_ms=slo_tpot_ms,
            timeout_s=timeout,
            max_failure_rate=max_failure_rate,
            api_key=api_key,
        )
        result = _run_with_progress(cfg)
    except (WorkloadError, BenchConfigError, ValueError) as exc:
        raise fail(str(exc)) from None
    if output:
        result.write(output)
    if as_json:
        typer.echo(json.dumps(result.to_json(), indent=2))
    else:
        out = output_console()
        out.print(summary_block(result), markup=False, highlight=False)
        print_summary(result, out)
        if output:
            typer.echo(f"result written to {output}")
    if not result.valid:
        raise typer.Exit(1)


def _run_with_progress(cfg: BenchConfig) -> BenchResult:
    """The benchmark with a completed/total bar per phase on stderr (a heartbeat line in logs)."""
    plan = build_plan(
        cfg.workload,
        cfg.model,
        endpoint=cfg.endpoint,
        warmup=cfg.warmup,
        prime_rounds=cfg.prime_rounds,
        single_stream=cfg.single_stream,
        extra_body=cfg.extra_body,
    )
    totals = {"warmup": len(plan.warmup), "measured": len(plan.measured), "single": len(plan.single)}
    with BenchProgress(output_console(stderr=True), totals) as progress:
        run = run_async(run_benchmark(cfg, plan, on_done=progress))
    return result_from_run(run, cfg)


def _api_key(name: str | None) -> str | None:
    """The bearer token named by --api-key-env; no flag, no token (keys are never sent by default)."""
    if not name:
        return None
    value = os.environ.get(name)
    if not value:
        raise fail(
            f"--api-key-env {name}: the environment variable {name} is not set; export it or drop the flag"
        )
    return value


def _extra_body(text: str | None) -> dict:
    if not text:
        return {}
    try:
        extra = json.loads(text)
    except ValueError as exc:
        raise WorkloadError(
            f"--extra-body is not JSON ({exc}); give an object like '{{\"top_k\": 1}}'"
        ) from None
    if not isinstance(extra, dict):
        raise WorkloadError("--extra-body must be a JSON object, e.g. '{\"top_k\": 1}'")
    return extra


def _warn_if_workloads_differ(da: dict, db: dict) -> None:
    differ = workload_differences(da, db)
    if differ:
        typer.echo(
            f"rocport: warning: the workloads differ ({'; '.join(differ)}): the deltas compare "
            f"different work, not only different servers",
            err=True,
        )


@bench_app.command("compare")
def compare(
    a: Path = typer.Argument(..., help="Baseline result JSON (ours, sglang or vllm)."),
    b: Path = typer.Argument(..., help="Result JSON to compare against the baseline."),
    as_json: bool = typer.Option(False, "--json", help="Print the rows as JSON (as --format json)."),
    fmt: Format = FORMAT_OPTION,
) -> None:
    """Compare two result files metric by metric, with percentage deltas and which is better."""
    try:
        da, db = load_result(a), load_result(b)
    except ValueError as exc:
        raise fail(str(exc)) from None
    rows = compare_results(da, db)
    if not rows:
        raise fail(f"{a} and {b} share no known metric; are both benchmark results?")
    if as_json or fmt is not Format.table:
        _warn_if_workloads_differ(da, db)
        print_listing(
            ["metric", "A", "B", "delta %", "better"],
            [[r.metric, r.a, r.b, r.delta_pct, r.better] for r in rows],
            Format.json if as_json else fmt,
            records=[row.__dict__ for row in rows],
        )
        return
    console = output_console()
    console.print(f"A: {a}  ({validity(da)})", highlight=False, soft_wrap=True)
    console.print(f"B: {b}  ({validity(db)})", highlight=False, soft_wrap=True)
    _warn_if_workloads_differ(da, db)
    tab = Table(title="B vs A")
    for col in ("metric", "A", "B", "delta", "better"):
        tab.add_column(col, justify="left" if col == "metric" else "right")
    for row in rows:
        arrow = "higher is better" if row.higher_is_better else "lower is better"
        delta = "-" if row.delta_pct is None else f"{row.delta_pct:+.1f}%"
        better = {"B": "[green]B[/]", "A": "[red]A[/]", "same": "same", None: "-"}[row.better]
        tab.add_row(f"{row.metric} ({arrow})", cell(row.a), cell(row.b), delta, better)
    console.print(tab)
