"""How much does `rocport bench`'s client cost, and how true are its timings?

Starts evals/bench_stream_server.py in its own process (a cheap SSE server with an 80 ms TTFT that
records its own receive/first-write timestamps), runs the rocport bench client against it at
concurrency 64 and 256 in this process, and prints streamed chunks/s, the client's CPU per chunk
(this process only, measured window only) and the TTFT error against the server's truth.

    python -m evals.bench_client        # concurrency 64 and 256; server ITL 0 (back to back) and 5 ms
    python -m evals.bench_client --itl-ms 5 --concurrency 64 --rounds 2
No timed asserts: it prints numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import subprocess
import sys
import time
import urllib.request

import numpy as np

from evals.bench_floor import floor_run
from tools.bench import BenchConfig, Workload, result_from_run
from tools.bench.runner import run_async, run_benchmark

# Measured on this 2-core machine against the same kind of server (from the issue).
REFERENCE = [
    ("sglang bench_serving (python)", "8", "2-8"),
    ("sglang bench (rust)", "1.6", "-"),
    ("guidellm", "~24", "2-8"),
    ("aiperf", "~30", "2-8"),
    ("target (rocport)", "<= 4", "<= 2"),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(args, port: int, itl_ms: float) -> subprocess.Popen:
    cmd = [
        sys.executable,
        "-m",
        "evals.bench_stream_server",
        "--port",
        str(port),
        "--ttft-ms",
        str(args.ttft_ms),
        "--itl-ms",
        str(itl_ms),
        "--isl",
        str(args.isl),
        "--tokens-per-chunk",
        str(args.tokens_per_chunk),
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return proc
        except OSError:
            time.sleep(0.05)
    proc.kill()
    said = proc.stdout.read().decode() if proc.stdout else ""
    raise SystemExit(f"bench stream server did not start: {said[-500:]}")


def truth(port: int) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/truth", timeout=30) as resp:
        return json.load(resp)


def measure(args, port: int, conc: int) -> dict:
    wl = Workload(isl=args.isl, osl=args.osl, num_prompts=conc * args.rounds, seed=conc)
    cfg = BenchConfig(
        base_url=f"http://127.0.0.1:{port}", model="m", workload=wl, max_concurrency=conc, warmup=conc
    )
    ru0 = resource.getrusage(resource.RUSAGE_SELF)
    run = run_async(run_benchmark(cfg))
    ru1 = resource.getrusage(resource.RUSAGE_SELF)
    res = result_from_run(run, cfg)
    server = truth(port)
    errs, lag_in, lag_out = [], [], []
    for rec in run.measured:
        t = server.get(rec.rid)
        if rec.ok and t and t[1]:
            errs.append(((rec.first - rec.start) - (t[1] - t[0])) * 1000)
            lag_in.append((t[0] - rec.start) * 1000)
            lag_out.append((rec.first - t[1]) * 1000)
    chunks = res.counts["chunks"]
    return {
        "concurrency": conc,
        "requests": res.counts["completed"],
        "failed": res.counts["failed"],
        "chunks": chunks,
        "chunks_per_s": chunks / res.duration_s,
        "cpu_us_per_chunk": run.client_cpu_s / chunks * 1e6 if chunks else float("nan"),
        "cpu_util": run.client_cpu_s / res.duration_s,
        "sys_share": (ru1.ru_stime - ru0.ru_stime)
        / max(1e-9, (ru1.ru_stime - ru0.ru_stime) + (ru1.ru_utime - ru0.ru_utime)),
        "median_ttft_ms": res.latency_ms["ttft"]["median"] if res.latency_ms["ttft"] else float("nan"),
        "ttft_err_ms": float(np.median(np.abs(errs))) if errs else float("nan"),
        "upload_lag_ms": float(np.median(lag_in)) if lag_in else float("nan"),
        "delivery_lag_ms": float(np.median(lag_out)) if lag_out else float("nan"),
        "valid": res.valid,
    }


def measure_floor(args, port: int, conc: int) -> dict:
    """The no-op reader at the same concurrency: the event loop's own cost per read."""
    out = run_async(floor_run(port, conc, args.rounds, args.osl))
    server = truth(port)
    errs = [
        ((first - start) - (server[rid][1] - server[rid][0])) * 1000
        for rid, start, first in out["firsts"]
        if rid in server and server[rid][1]
    ]
    return {
        "reads": out["reads"],
        "cpu_us_per_read": out["cpu_s"] / out["reads"] * 1e6,
        "ttft_err_ms": float(np.median(np.abs(errs))) if errs else float("nan"),
    }


def print_rows(args, itl_ms: float, rows: list[tuple[dict, dict | None]]) -> None:
    print(
        f"\nserver: TTFT {args.ttft_ms:g} ms, ITL {itl_ms:g} ms ({'back to back' if not itl_ms else 'paced'}), "
        f"ISL {args.isl}, OSL {args.osl}, {args.tokens_per_chunk} token/chunk"
    )
    print(
        f"{'conc':>5} {'reqs':>5} {'fail':>4} {'chunks':>7} {'chunks/s':>9} {'CPU us/chunk':>12} {'CPU':>4} "
        f"{'sys':>4} {'med TTFT':>8} {'|TTFT err|':>10} {'upload':>6} {'deliver':>7} | {'floor us/read':>13} "
        f"{'floor |err|':>11}"
    )
    for r, f in rows:
        floor = f"{f['cpu_us_per_read']:>13.2f} {f['ttft_err_ms']:>11.2f}" if f else f"{'-':>13} {'-':>11}"
        print(
            f"{r['concurrency']:>5} {r['requests']:>5} {r['failed']:>4} {r['chunks']:>7} {r['chunks_per_s']:>9.0f} "
            f"{r['cpu_us_per_chunk']:>12.2f} {r['cpu_util']:>4.0%} {r['sys_share']:>4.0%} "
            f"{r['median_ttft_ms']:>8.2f} {r['ttft_err_ms']:>10.2f} {r['upload_lag_ms']:>6.2f} "
            f"{r['delivery_lag_ms']:>7.2f} | {floor}"
        )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Cost and accuracy of the rocport bench client.")
    ap.add_argument("--concurrency", type=int, nargs="+", default=[64, 256])
    ap.add_argument("--isl", type=int, default=128)
    ap.add_argument("--osl", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=4, help="measured requests = rounds x concurrency")
    ap.add_argument("--ttft-ms", type=float, default=80.0)
    ap.add_argument(
        "--itl-ms",
        type=float,
        nargs="+",
        default=[0.0, 5.0],
        help="server gap between chunks; 0 streams back to back (one run per value)",
    )
    ap.add_argument("--tokens-per-chunk", type=int, default=1)
    ap.add_argument("--no-floor", action="store_true", help="skip the no-op reader baseline")
    args = ap.parse_args(argv)
    print(
        f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs "
        "(CPU per read rises steeply when the machine is oversubscribed)"
    )
    for itl_ms in args.itl_ms:
        port = _free_port()
        proc = start_server(args, port, itl_ms)
        try:
            rows = [
                (measure(args, port, c), None if args.no_floor else measure_floor(args, port, c))
                for c in args.concurrency
            ]
        finally:
            proc.terminate()
            proc.wait(timeout=10)
        print_rows(args, itl_ms, rows)
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    print(
        "\nTimes in ms. |TTFT err|: median over requests of |client TTFT - server TTFT|, server TTFT = first "
        "token written - request arrived (its kernel receive stamp; the server's own clock).\n"
        "upload: server receive - client send; "
        "deliver: client first read - server first write (medians). floor: a no-op reader on the same loop."
    )
    print("\nreference clients on this machine (same kind of server, from the issue):")
    print(f"{'client':<32} {'CPU us/chunk':>13} {'TTFT err ms @80ms':>18}")
    for name, us, err in REFERENCE:
        print(f"{name:<32} {us:>13} {err:>18}")


if __name__ == "__main__":
    main()
