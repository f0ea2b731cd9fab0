"""Build a framework's own model class on torch's meta device and print its parameters as JSON.

Runs inside a throwaway environment that has torch and the framework (sglang or vllm) installed, not
rocport's: it imports only the standard library, torch and the framework. Nothing of the framework is
stubbed: its parallel state is initialised for one process on the CPU (gloo), its config classes read
the model's config.json, and its own meta-device construction path builds the model (no weight memory).

    python meta_model.py --framework sglang --model-path DIR [--with-draft] > params.json

Prints {"source": "model-class", "framework", "version", "class", "params": {name: {shape, dtype}}} (and
"draft_class", "draft_params" with --with-draft);
when construction fails it prints {"source": "blocked", "stage", "error", "where"} and exits 3, so the
caller can say exactly what blocked it and fall back to the static loader simulation.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import traceback

BLOCKED_EXIT = 3


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _params(model) -> dict[str, dict]:
    return {name: {"shape": list(p.shape), "dtype": str(p.dtype).removeprefix("torch.")}
            for name, p in model.named_parameters()}


def sglang_setup(model_path: str) -> None:
    """Publish sglang's server args and build its process groups for one CPU process (gloo)."""
    from sglang.srt.distributed.bootstrap import _init_parallel_groups
    from sglang.srt.runtime_context import SpawnRanks, publish
    from sglang.srt.server_args import ServerArgs

    args = ServerArgs(model_path=model_path, device="cpu", tp_size=1, load_format="dummy",
                      skip_tokenizer_init=True, trust_remote_code=True)
    publish(args, role="scheduler", ranks=SpawnRanks(world_rank=0, dp_rank=None, gpu_id=None))
    _init_parallel_groups(backend="gloo", dist_init_method=f"tcp://127.0.0.1:{_free_port()}",
                          server_args=args, gpu_id=0)
    sglang_setup.args = args


def sglang_model(model_path: str, draft: bool):
    """sglang's own `_initialize_model` under `torch.device("meta")`, as its structural-signature path does."""
    import torch
    from sglang.srt.configs.load_config import LoadConfig
    from sglang.srt.configs.model_config import ModelConfig
    from sglang.srt.model_loader.loader import _get_quantization_config, _initialize_model
    from sglang.srt.model_loader.utils import set_default_torch_dtype

    config = ModelConfig.from_server_args(sglang_setup.args, is_draft_model=draft)
    load = LoadConfig(load_format="dummy")
    quant = _get_quantization_config(config, load)
    with set_default_torch_dtype(config.dtype), torch.device("meta"):
        return _initialize_model(config, load, quant)


def vllm_model(model_path: str, draft: bool):
    """vLLM's own model class from its registry, constructed under its config context on the meta device."""
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")  # vLLM's own switch to its CPU platform
    import torch
    from vllm.config import VllmConfig, set_current_vllm_config
    from vllm.distributed import init_distributed_environment, initialize_model_parallel
    from vllm.engine.arg_utils import EngineArgs
    from vllm.model_executor.model_loader.utils import initialize_model
    from vllm.utils.torch_utils import set_default_torch_dtype

    engine = EngineArgs(model=model_path, skip_tokenizer_init=True, trust_remote_code=True,
                        load_format="dummy", enforce_eager=True)
    vllm_config: VllmConfig = engine.create_engine_config()
    if draft:
        vllm_config.model_config.hf_config.architectures = [
            _vllm_draft_arch(vllm_config.model_config.hf_config.architectures[0])]
    with set_current_vllm_config(vllm_config):
        init_distributed_environment(world_size=1, rank=0, local_rank=0, backend="gloo",
                                     distributed_init_method=f"tcp://127.0.0.1:{_free_port()}")
        initialize_model_parallel(1, 1)
        with set_default_torch_dtype(vllm_config.model_config.dtype), torch.device("meta"):
            return initialize_model(vllm_config=vllm_config)


def _vllm_draft_arch(arch: str) -> str:
    return {"Glm4MoeForCausalLM": "Glm4MoeMTPModel", "DeepseekV3ForCausalLM": "DeepSeekMTPModel",
            "DeepseekV2ForCausalLM": "DeepSeekMTPModel"}.get(arch, arch)


def _where(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    return f"{frames[-1].filename}:{frames[-1].lineno}" if frames else ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--framework", choices=("sglang", "vllm"), required=True)
    parser.add_argument("--model-path", required=True, help="Directory holding config.json.")
    parser.add_argument("--with-draft", action="store_true", help="Also build the nextn/MTP draft model class.")
    args = parser.parse_args(argv)
    # frameworks log to stdout; keep stdout for the one JSON answer, everything else goes to stderr
    answer = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    path = os.path.abspath(args.model_path)
    out: dict = {"framework": args.framework}
    try:
        from importlib.metadata import version
        out["version"] = version(args.framework)
        if args.framework == "sglang":
            sglang_setup(path)
        build = sglang_model if args.framework == "sglang" else vllm_model
        model = build(path, False)
    except Exception as exc:  # noqa: BLE001 - any failure is the answer: it names what blocked construction
        traceback.print_exc(file=sys.stderr)
        out.update(source="blocked", error=f"{type(exc).__name__}: {exc}"[:500], where=_where(exc))
        print(json.dumps(out), file=answer)
        return BLOCKED_EXIT
    out.update(source="model-class", **{"class": type(model).__name__}, params=_params(model))
    del model
    if args.with_draft:
        try:
            draft = build(path, True)
            out.update(draft_class=type(draft).__name__, draft_params=_params(draft))
        except Exception as exc:  # noqa: BLE001 - the draft class may be blocked where the target is not
            traceback.print_exc(file=sys.stderr)
            out["draft_blocked"] = {"error": f"{type(exc).__name__}: {exc}"[:500], "where": _where(exc)}
    print(json.dumps(out), file=answer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
