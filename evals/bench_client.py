"""How much does `rocport bench`'s client cost, and how true are its timings?

Starts evals/bench_stream_server.py in its own process (a cheap SSE server with an 80 ms TTFT that
records its own receive/first-write timestamps), runs the rocport bench client against it at
concurrency 64 and 256 in this process, and prints streamed chunks/s, the client's CPU per chunk
(this process only, measured window only) and the TTFT error against the server's truth.

    python -m evals.bench_client                 # defaults: ISL 128, OSL 256, 80 ms TTFT
    python -m evals.bench_client --itl-ms 5 --concurrency 64 256
No timed asserts: it prints numbers.
"""
from __future__ import annotations

import argparse
import json
import resource
import socket
import subprocess
import sys
import time
import urllib.request

import numpy as np

from tools.bench import BenchConfig, Workload, result_from_run
from tools.bench.runner import run_async, run_benchmark

# Measured on this 2-core machine against the same kind of server (from the issue).
REFERENCE = [("sglang bench_serving (python)", "8", "2-8"), ("sglang bench (rust)", "1.6", "-"),
             ("guidellm", "~24", "2-8"), ("aiperf", "~30", "2-8"), ("target (rocport)", "<= 4", "<= 2")]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(args, port: int) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "evals.bench_stream_server", "--port", str(port), "--ttft-ms", str(args.ttft_ms),
           "--itl-ms", str(args.itl_ms), "--isl", str(args.isl), "--tokens-per-chunk", str(args.tokens_per_chunk)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return proc
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit(f"bench stream server did not start: {proc.stdout.read().decode()[-500:]}")


def truth(port: int) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/truth", timeout=30) as resp:
        return json.load(resp)


def measure(args, port: int, conc: int) -> dict:
    wl = Workload(isl=args.isl, osl=args.osl, num_prompts=conc * args.rounds, seed=conc)
    cfg = BenchConfig(base_url=f"http://127.0.0.1:{port}", model="m", workload=wl, max_concurrency=conc,
                      warmup=conc)
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
    return {"concurrency": conc, "requests": res.counts["completed"], "failed": res.counts["failed"],
            "chunks": chunks, "chunks_per_s": chunks / res.duration_s,
            "cpu_us_per_chunk": run.client_cpu_s / chunks * 1e6 if chunks else float("nan"),
            "cpu_util": run.client_cpu_s / res.duration_s,
            "sys_share": (ru1.ru_stime - ru0.ru_stime) / max(1e-9, (ru1.ru_stime - ru0.ru_stime)
                                                             + (ru1.ru_utime - ru0.ru_utime)),
            "median_ttft_ms": res.latency_ms["ttft"]["median"] if res.latency_ms["ttft"] else float("nan"),
            "ttft_err_ms": float(np.median(np.abs(errs))) if errs else float("nan"),
            "upload_lag_ms": float(np.median(lag_in)) if lag_in else float("nan"),
            "delivery_lag_ms": float(np.median(lag_out)) if lag_out else float("nan"),
            "valid": res.valid}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Cost and accuracy of the rocport bench client.")
    ap.add_argument("--concurrency", type=int, nargs="+", default=[64, 256])
    ap.add_argument("--isl", type=int, default=128)
    ap.add_argument("--osl", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=4, help="measured requests = rounds x concurrency")
    ap.add_argument("--ttft-ms", type=float, default=80.0)
    ap.add_argument("--itl-ms", type=float, default=0.0, help="server gap between chunks (0: back to back)")
    ap.add_argument("--tokens-per-chunk", type=int, default=1)
    args = ap.parse_args(argv)
    port = _free_port()
    proc = start_server(args, port)
    try:
        rows = [measure(args, port, c) for c in args.concurrency]
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    print(f"\nrocport bench client vs a local SSE server (TTFT {args.ttft_ms:g} ms, ITL {args.itl_ms:g} ms, "
          f"ISL {args.isl}, OSL {args.osl}, {args.tokens_per_chunk} token/chunk)")
    hdr = (f"{'conc':>5} {'reqs':>6} {'fail':>4} {'chunks':>8} {'chunks/s':>10} {'CPU us/chunk':>13} "
           f"{'client CPU':>10} {'sys':>4} {'med TTFT ms':>11} {'|TTFT err| ms':>13} {'upload ms':>9} {'deliver ms':>10}")
    print(hdr)
    for r in rows:
        print(f"{r['concurrency']:>5} {r['requests']:>6} {r['failed']:>4} {r['chunks']:>8} {r['chunks_per_s']:>10.0f} "
              f"{r['cpu_us_per_chunk']:>13.2f} {r['cpu_util']:>9.0%} {r['sys_share']:>4.0%} {r['median_ttft_ms']:>11.2f} "
              f"{r['ttft_err_ms']:>13.2f} {r['upload_lag_ms']:>9.2f} {r['delivery_lag_ms']:>10.2f}")
    print("\nreference clients on this machine (same kind of server):")
    print(f"{'client':<32} {'CPU us/chunk':>13} {'TTFT err ms @80ms':>18}")
    for name, us, err in REFERENCE:
        print(f"{name:<32} {us:>13} {err:>18}")


if __name__ == "__main__":
    main()
