"""What `rocport bench` shows around the run: the model the server serves (GET /v1/models), a
completed/total progress bar per phase (a heartbeat line in logs), and a bench_serving-style summary
block, so results read side by side with sglang's and vLLM's."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from typing import Self

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from tools.bench.result import BenchResult

HEARTBEAT_S = 30.0


def served_model(base_url: str, timeout_s: float = 10) -> str:
    """The first model id the server lists at /v1/models; ValueError saying what to pass otherwise."""
    url = base_url.rstrip("/") + ("/models" if base_url.rstrip("/").endswith("/v1") else "/v1/models")
    if not url.startswith(("http://", "https://")):
        raise ValueError(
            f"{base_url} is not an http(s) URL: pass the server's base URL, e.g. http://127.0.0.1:30000"
        )
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as resp:  # noqa: S310 (scheme checked above)
            data = json.loads(resp.read() or b"{}")
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise ValueError(
            f"cannot read the served model from {url} ({getattr(exc, 'reason', exc)}): is the "
            f"server running, or pass --model NAME"
        ) from None
    ids = [str(m["id"]) for m in data.get("data", []) if isinstance(m, dict) and m.get("id")]
    if not ids:
        raise ValueError(f"{url} lists no model: pass --model NAME")
    return ids[0]


class BenchProgress:
    """A bar per phase (warmup, measured, single-stream) on a terminal; a line every 30 s otherwise."""

    def __init__(self, console: Console, totals: dict[str, int], heartbeat_s: float = HEARTBEAT_S):
        self.console, self.totals, self.heartbeat_s = console, totals, heartbeat_s
        self.done = dict.fromkeys(totals, 0)
        self.started = time.monotonic()
        self._progress: Progress | None = None
        self._tasks: dict[str, TaskID] = {}
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None

    def __enter__(self) -> Self:
        if self.console.is_terminal:
            self._progress = Progress(
                SpinnerColumn(),
                TextColumn("{task.description:<13}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=self.console,
                transient=True,
                refresh_per_second=4,
            )
            self._tasks = {p: self._progress.add_task(p, total=n) for p, n in self.totals.items() if n}
            self._progress.start()
        elif self.heartbeat_s > 0:
            self._beat = threading.Thread(target=self._heartbeat, name="rocport-bench-heartbeat", daemon=True)
            self._beat.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()
        self._stop.set()
        if self._beat is not None:
            self._beat.join(timeout=2)

    def line(self) -> str:
        parts = [f"{p} {self.done[p]}/{n}" for p, n in self.totals.items() if n]
        return f"… bench: {', '.join(parts)} requests done, {time.monotonic() - self.started:.0f}s"

    def _heartbeat(self) -> None:
        while not self._stop.wait(self.heartbeat_s):
            self.console.print(self.line(), markup=False, highlight=False, soft_wrap=True)

    def __call__(self, record) -> None:
        phase = record.phase if record.phase in self.done else "measured"
        self.done[phase] += 1
        if self._progress is not None and phase in self._tasks:
            self._progress.advance(self._tasks[phase])


def _ms(r: BenchResult, stat: str, metric: str) -> str:
    v = (r.latency_ms.get(metric) or {}).get(stat)
    return "-" if v is None else f"{v:.2f}"


def summary_block(r: BenchResult) -> str:
    """The `============ Serving Benchmark Result ============` block of sglang/vLLM bench_serving."""
    c, t = r.counts, r.throughput
    rows = [
        ("Successful requests:", c.get("completed")),
        ("Failed requests:", c.get("failed")),
        ("Benchmark duration (s):", f"{r.duration_s:.2f}"),
        ("Total input tokens:", c.get("input_tokens")),
        ("Total generated tokens:", c.get("output_tokens")),
        ("Request throughput (req/s):", f"{t.get('requests_per_s') or 0:.2f}"),
        ("Output token throughput (tok/s):", f"{t.get('output_tokens_per_s') or 0:.2f}"),
        ("Total Token throughput (tok/s):", f"{t.get('total_tokens_per_s') or 0:.2f}"),
    ]
    out = ["{s:{c}^50}".format(s=" Serving Benchmark Result ", c="=")]
    out += [f"{k:<40}{v!s:<10}" for k, v in rows]
    for title, metric in (
        ("Time to First Token", "ttft"),
        ("Time per Output Token (excl. 1st token)", "tpot"),
        ("Inter-token Latency", "itl"),
        ("End-to-end Latency", "e2e"),
    ):
        out.append("{s:{c}^50}".format(s=f" {title} ", c="-"))
        for stat in ("mean", "median", "p99"):
            out.append(f"{stat.capitalize() + ' ' + metric.upper() + ' (ms):':<40}{_ms(r, stat, metric):<10}")
    out.append("=" * 50)
    return "\n".join(out)


def _mean(values) -> float | None:
    nums = [v for v in values or [] if isinstance(v, (int, float))]
    return sum(nums) / len(nums) if nums else None


def workload_of(d: dict) -> dict:
    """What a result file says about its workload, read alike from ours, sglang's and vLLM's files."""
    workload = d.get("workload")
    ours = workload if isinstance(workload, dict) else {}
    done = (d.get("completed") or 0) or None
    isl = (
        d.get("random_input_len")
        or ours.get("isl")
        or _mean(d.get("input_lens"))
        or (d["total_input_tokens"] / done if done and d.get("total_input_tokens") else None)
    )
    osl = (
        d.get("random_output_len")
        or ours.get("osl")
        or _mean(d.get("output_lens"))
        or (d["total_output_tokens"] / done if done and d.get("total_output_tokens") else None)
    )
    return {
        "input tokens": round(isl) if isl else None,
        "output tokens": round(osl) if osl else None,
        "prompts": ours.get("num_prompts")
        or d.get("num_prompts")
        or ((d.get("completed") or 0) + (d.get("failed") or 0))
        or None,
        "max concurrency": d.get("max_concurrency"),
        "request rate": str(d.get("request_rate")),
        "prefix hit target": ours.get("expected_hit_rate"),
    }


def workload_differences(a: dict, b: dict) -> list[str]:
    """'input tokens: 1024 vs 20000' for each workload fact both files state and that differs."""
    wa, wb = workload_of(a), workload_of(b)
    return [
        f"{k}: {wa[k]} vs {wb[k]}"
        for k in wa
        if wa[k] not in (None, "None") and wb[k] not in (None, "None") and wa[k] != wb[k]
    ]
