"""Start tinyserve's OpenAI-compatible server.

    python3 -m tinyserve.launch_server --model-path /models/tiny --port 30000 [--host 127.0.0.1] [--tp 1]

Weights load through the model's load_weights before the port opens, so a checkpoint/model mismatch
ends the launch with the loader's traceback in the log.
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

from tinyserve.config import ConfigError, ModelConfig
from tinyserve.engine import Engine, EngineOptions
from tinyserve.model_loader import load_model
from tinyserve.prefix_cache import PrefixCache
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
    parser.add_argument("--prefill-us-per-token", type=float, default=0.0,
                        help="sleep per uncached prompt token (mimics GPU prefill time)")
    parser.add_argument("--token-delay-ms", type=float, default=0.0, help="sleep per generated token")
    parser.add_argument("--log-level", default="info")
    args = parser.parse_args(argv)
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


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stdout,
                        format="[%(asctime)s] %(levelname)s %(name)s: %(message)s")
    log.info("server_args: %s", vars(args))
    log.info(describe_kernels())
    started = time.monotonic()
    log.info("Load weight begin. model_path=%s", args.model_path)
    model = load_model(args.model_path)
    log.info("Load weight end. took %.2f s, tp=%d dp=%d (one CPU replica)", time.monotonic() - started,
             args.tp, args.dp)
    tokenizer = ByteTokenizer(model.config)
    options = EngineOptions(prefill_us_per_token=args.prefill_us_per_token, token_delay_ms=args.token_delay_ms)
    engine = Engine(model, model.config.eos_token_id, options,
                    PrefixCache(args.prefix_block_size, args.prefix_cache_blocks))
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
