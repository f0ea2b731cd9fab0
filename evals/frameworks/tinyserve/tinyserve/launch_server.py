"""Start tinyserve's OpenAI-compatible server.

    python3 -m tinyserve.launch_server --model-path /models/tiny --port 30000 [--host 127.0.0.1] [--tp 1]
        [--dp 2] [--moe-runner-backend batched|naive] [--max-running-requests 64] [--chunked-prefill-size 512]

--dp N starts N worker processes behind a router (tinyserve/router.py); --tp divides the simulated
device time of each step over N ranks (there is one CPU replica per worker, see scheduler.py).

Weights load through the model's load_weights before the port opens, so a checkpoint/model mismatch
ends the launch with the loader's traceback in the log.
"""
from __future__ import annotations

import argparse
import json
import logging
import signal
import socket
import sys
import threading
import time
from pathlib import Path

from tinyserve.config import ConfigError, ModelConfig
from tinyserve.engine import Engine
from tinyserve.layers import moe_kernels
from tinyserve.model_loader import load_model
from tinyserve.prefix_cache import PrefixCache
from tinyserve.router import make_router, start_workers, wait_workers
from tinyserve.scheduler import DeviceOptions
from tinyserve.server import ServerState, make_server
from tinyserve.tokenizer import ByteTokenizer

log = logging.getLogger("tinyserve")
KERNELS_INFO = Path(__file__).resolve().parent.parent / "build" / "build_info.json"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="launch_server.py", description=__doc__.splitlines()[0])
    parser.add_argument("--model-path", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=30000)
    parser.add_argument("--tp", "--tp-size", dest="tp", type=int, default=1)
    parser.add_argument("--dp", "--dp-size", dest="dp", type=int, default=1)
    parser.add_argument("--served-model-name", default=None)
    parser.add_argument("--prefix-block-size", type=int, default=16)
    parser.add_argument("--prefix-cache-blocks", type=int, default=8192)
    parser.add_argument("--dp-rank", type=int, default=None, help=argparse.SUPPRESS)  # set by the router
    parser.add_argument("--moe-runner-backend", choices=moe_kernels.BACKENDS, default="batched",
                        help="routed-expert kernel: batched numpy matmuls or a per-token loop")
    parser.add_argument("--moe-config-dir", default=str(moe_kernels.CONFIG_DIR),
                        help="where tuned per-shape MoE configs (benchmarks/tune_moe.py) are read")
    parser.add_argument("--max-running-requests", type=int, default=64)
    parser.add_argument("--chunked-prefill-size", type=int, default=512,
                        help="prompt tokens per forward step over all requests (-1: no chunking)")
    parser.add_argument("--step-overhead-ms", type=float, default=0.0,
                        help="simulated device cost of each forward step")
    parser.add_argument("--prefill-us-per-token", type=float, default=0.0,
                        help="simulated device cost per uncached prompt token (mimics GPU prefill time)")
    parser.add_argument("--token-delay-ms", "--decode-ms-per-seq", dest="token_delay_ms", type=float,
                        default=0.0, help="simulated device cost per decoded sequence per step")
    parser.add_argument("--tp-comm-ms", type=float, default=0.0,
                        help="simulated all-reduce cost per step per extra tensor-parallel rank")
    parser.add_argument("--kernel-launch-us", type=float, default=0.0,
                        help="simulated device cost of each MoE expert call (a kernel launch)")
    parser.add_argument("--log-level", default="info")
    args = parser.parse_args(argv)
    if args.tp < 1 or args.dp < 1 or args.max_running_requests < 1:
        parser.error("--tp, --dp and --max-running-requests must be at least 1")
    try:  # a wrong path is a usage error; anything wrong inside the checkpoint keeps its traceback
        ModelConfig.from_model_path(args.model_path)
    except ConfigError as exc:
        parser.error(str(exc))
    return args


def describe_kernels() -> str:
    if not KERNELS_INFO.is_file():
        return "kernels: not built (build.py); running the numpy reference ops"
    info = json.loads(KERNELS_INFO.read_text())
    return f"kernels: {info['library']} ({info['backend']} {info['arch']}); CPU server runs the numpy reference ops"


def _free_port(host: str) -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def _worker_argv(argv: list[str]) -> list[str]:
    """The router's own arguments without --dp/--port/--host (each worker gets its own)."""
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
            continue
        name = arg.split("=", 1)[0]
        if name in ("--dp", "--dp-size", "--port", "--host"):
            skip = "=" not in arg
            continue
        out.append(arg)
    return out


def serve_data_parallel(args: argparse.Namespace, argv: list[str]) -> int:
    """--dp N > 1: N worker processes (each a whole server) and the router in front of them."""
    ports = [_free_port(args.host) for _ in range(args.dp)]
    workers = start_workers(_worker_argv(argv), args.dp, args.host, ports)
    try:
        wait_workers(workers, args.host, ports)
        server = make_router(args.host, args.port, args.host, ports)
        log.info("data parallel: %d workers on ports %s", args.dp, ports)
        log.info("The server is fired up and ready to roll! http://%s:%d", args.host, args.port)
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        threading.Thread(target=server.serve_forever, daemon=True).start()
        while not stop.wait(0.5):
            if any(w.poll() is not None for w in workers):
                log.error("a data-parallel worker exited; stopping")
                return 1
        return 0
    finally:
        for worker in workers:
            worker.terminate()
        for worker in workers:
            worker.wait(timeout=10)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stdout,
                        format="[%(asctime)s] %(levelname)s %(name)s: %(message)s")
    log.info("server_args: %s", vars(args))
    if args.dp > 1:
        return serve_data_parallel(args, argv)
    log.info(describe_kernels())
    started = time.monotonic()
    log.info("Load weight begin. model_path=%s", args.model_path)
    model = load_model(args.model_path)
    log.info("Load weight end. took %.2f s, tp=%d dp_rank=%s", time.monotonic() - started, args.tp, args.dp_rank)
    config = model.config
    moe_kernels.select(args.moe_runner_backend, config.n_routed_experts, config.moe_intermediate_size,
                       config.hidden_size, Path(args.moe_config_dir))
    tokenizer = ByteTokenizer(config)
    options = DeviceOptions(max_running_requests=args.max_running_requests,
                            chunked_prefill_size=args.chunked_prefill_size, step_overhead_ms=args.step_overhead_ms,
                            prefill_us_per_token=args.prefill_us_per_token, decode_ms_per_seq=args.token_delay_ms,
                            tp=args.tp, tp_comm_ms=args.tp_comm_ms, kernel_launch_us=args.kernel_launch_us)
    engine = Engine(model, config.eos_token_id, options, PrefixCache(args.prefix_block_size, args.prefix_cache_blocks))
    name = args.served_model_name or Path(args.model_path).resolve().name
    server = make_server(args.host, args.port, ServerState(engine, tokenizer, name))
    log.info("The server is fired up and ready to roll! http://%s:%d", args.host, args.port)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        log.info("shutting down")
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
