"""Print the parameters the framework expects for a checkpoint: {name: {shape, dtype}} as JSON.

    python3 -m tinyserve.expected_params --model-path /models/tiny
"""
from __future__ import annotations

import argparse
import json
import sys

from tinyserve.config import ConfigError
from tinyserve.model_loader import build_model


def expected_params(model_path: str) -> dict[str, dict]:
    """Registered parameter names with the shape and dtype the checkpoint must provide."""
    model = build_model(model_path)
    return {name: {"shape": list(p.shape), "dtype": p.dtype} for name, p in model.named_parameters()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m tinyserve.expected_params", description=__doc__.splitlines()[0])
    parser.add_argument("--model-path", required=True)
    args = parser.parse_args(argv)
    try:
        params = expected_params(args.model_path)
    except ConfigError as exc:
        parser.error(str(exc))
    json.dump(params, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
