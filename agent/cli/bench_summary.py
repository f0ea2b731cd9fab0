"""The terminal summary of one benchmark result: validity, throughput table, latency table, failures."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from tools.bench.result import THROUGHPUT_KINDS, BenchResult


def cell(v: Any, fmt: str = "{:,.2f}") -> str:
    """A number for a table cell, "-" when missing."""
    return "-" if v is None else fmt.format(v)


def print_summary(r: BenchResult, console: Console) -> None:
    """The rich summary table of one result."""
    w, c, t = r.workload, r.counts, r.throughput
    title = "[bold green]VALID[/]" if r.valid else "[bold red]INVALID[/]"
    console.print(
        f"{title}  ISL {w['isl']}  OSL {w['osl']}  prefix hit target {w['expected_hit_rate']:.1%}  "
        f"concurrency {r.config['max_concurrency']}  rate {r.config['request_rate']}"
    )
    for reason in r.invalid_reasons:
        console.print(f"  [red]invalid:[/] {reason}")
    for warning in r.warnings:
        console.print(f"  [yellow]warning:[/] {warning}")
    tab = Table(title="Throughput (measured window)", show_header=True)
    tab.add_column("metric")
    tab.add_column("value", justify="right")
    tab.add_column("kind")
    tab.add_row(
        "Requests completed / failed", f"{c['completed']} / {c['failed']}", f"{r.duration_s:.2f} s window"
    )
    for key, label in (
        ("requests_per_s", "Requests/s"),
        ("output_tokens_per_s", "Output tok/s"),
        ("total_tokens_per_s", "Total tok/s"),
        ("input_tokens_per_s", "Input tok/s"),
        ("uncached_input_tokens_per_s", "Uncached input tok/s"),
        ("output_tokens_per_s_per_stream", "Output tok/s per stream"),
        ("peak_output_tokens_per_s", "Peak output tok/s"),
    ):
        tab.add_row(label, cell(t.get(key)), THROUGHPUT_KINDS[key])
    hit = r.cache.get("hit_rate")
    tab.add_row(
        "Cache hit rate (token-weighted)", cell(hit, "{:.1%}"), f"target {w['expected_hit_rate']:.1%}"
    )
    if r.goodput.get("requests_per_s") is not None:
        tab.add_row(
            "Goodput req/s",
            cell(r.goodput["requests_per_s"]),
            f"TTFT <= {r.goodput['slo_ttft_ms']} ms, TPOT <= {r.goodput['slo_tpot_ms']} ms",
        )
    if r.single_stream:
        s = r.single_stream
        tab.add_row(
            "Single-stream output tok/s",
            cell(s.get("output_tokens_per_s")),
            "concurrency 1: generated tokens / request time",
        )
        tab.add_row(
            "Single-stream decode tok/s", cell(s.get("decode_tokens_per_s")), "concurrency 1: 1 / TPOT"
        )
    tab.add_row(
        "Tokens per chunk", cell(r.tokens_per_chunk.get("mean")), r.tokens_per_chunk.get("source", "")
    )
    console.print(tab)
    lat = Table(title="Latency (ms)")
    for col in ("metric", "mean", "median", "p90", "p95", "p99", "max", "std"):
        lat.add_column(col, justify="right" if col != "metric" else "left")
    for key, label in (
        ("ttft", "TTFT"),
        ("tpot", "TPOT"),
        ("itl", "ITL (per chunk)"),
        ("itl_per_token", "ITL (per token)"),
        ("e2e", "E2E"),
    ):
        s = r.latency_ms.get(key) or {}
        lat.add_row(label, *(cell(s.get(k)) for k in ("mean", "median", "p90", "p95", "p99", "max", "std")))
    console.print(lat)
    for f in r.failures:
        console.print(f"  [red]{f['count']} x[/] {f['error']}")
