"""Build a framework's own model class on torch's meta device and print its parameters as JSON.

Runs inside a throwaway environment that has torch and the framework (sglang or vllm) installed, not
rocport's: it imports only the standard library, torch and the framework. Nothing of the framework is
stubbed: its parallel state is initialised for one process on the CPU (gloo), its config classes read
the model's config.json, and its own meta-device construction path builds the model (no weight memory).

    python meta_model.py --framework sglang --model-path DIR [--with-draft] [--source CLONE] > params.json

With --source the framework's Python code is imported from the clone (CLONE/python/sglang or CLONE/vllm),
so a patch to the clone is what gets built; the installed package only supplies what the clone lacks
(its compiled extensions, which a source checkout has not built).

Prints {"source": "model-class", "framework", "version", "class", "params": {name: {shape, dtype}}} (and
"draft_class", "draft_params" with --with-draft);
when construction fails it prints {"source": "blocked", "stage", "error", "where"} and exits 3, so the
caller can say exactly what blocked it and fall back to the static loader simulation.
"""

from __future__ import annotations

import argparse
import importlib.machinery
import importlib.util
import json
import os
import socket
import sys
import traceback
from collections.abc import Iterable, Sequence
from importlib.machinery import ModuleSpec
from typing import Any, Protocol

BLOCKED_EXIT = 3


class _Parameter(Protocol):
    """What is read of a torch parameter (torch is not installed beside rocport: no stubs to check)."""

    @property
    def shape(self) -> Sequence[int]: ...
    @property
    def dtype(self) -> object: ...


class _Model(Protocol):
    """What is read of the framework's torch.nn.Module."""

    def named_parameters(self) -> Iterable[tuple[str, _Parameter]]: ...
    def named_modules(self) -> Iterable[tuple[str, object]]: ...


class _Setup:
    """What the setup step leaves for the model step: the framework's own config objects (untyped here)."""

    sglang_args: Any = None
    vllm_config: Any = None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class CloneFirstFinder:
    """Imports `framework.*` from the clone's package directory, falling back to the installed package's
    directory for files the clone does not have (compiled extensions); every package searches both."""

    def __init__(self, framework: str, clone_pkg: str, installed_pkg: str):
        self.framework, self.roots = framework, (clone_pkg, installed_pkg)

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> ModuleSpec | None:
        if fullname != self.framework and not fullname.startswith(self.framework + "."):
            return None
        parts = fullname.split(".")[1:]
        # the directories that may hold this module: the same relative place under each root
        dirs = [os.path.join(root, *parts[:-1]) if parts else os.path.dirname(root) for root in self.roots]
        spec = importlib.machinery.PathFinder.find_spec(fullname, [d for d in dirs if os.path.isdir(d)])
        if spec is not None and spec.submodule_search_locations is not None:
            subdirs = [os.path.join(root, *parts) for root in self.roots]
            spec.submodule_search_locations[:] = [d for d in subdirs if os.path.isdir(d)]
        return spec


def import_from_clone(framework: str, clone: str) -> str:
    """Put a CloneFirstFinder for `framework` in front of sys.meta_path; returns the clone's package dir."""
    candidates = [os.path.join(clone, framework), os.path.join(clone, "python", framework)]
    clone_pkg = next((c for c in candidates if os.path.isfile(os.path.join(c, "__init__.py"))), None)
    if clone_pkg is None:
        raise FileNotFoundError(f"{clone}: no {framework}/__init__.py (looked in {', '.join(candidates)})")
    installed = importlib.util.find_spec(framework)
    installed_pkg = os.path.dirname(installed.origin) if installed and installed.origin else clone_pkg
    sys.meta_path.insert(0, CloneFirstFinder(framework, clone_pkg, installed_pkg))
    return clone_pkg


def _params(model: _Model) -> dict[str, dict[str, Any]]:
    return {
        name: {"shape": list(p.shape), "dtype": str(p.dtype).removeprefix("torch.")}
        for name, p in model.named_parameters()
    }


def _loaders(model: _Model) -> dict[str, str]:
    """Submodules with their own load_weights ({path: "package.module.Class"}): where vLLM's
    AutoWeightsLoader hands a name over instead of matching it against parameters."""
    return {
        name: f"{type(m).__module__}.{type(m).__qualname__}"
        for name, m in model.named_modules()
        if name and callable(getattr(m, "load_weights", None))
    }


def sglang_setup(model_path: str) -> None:
    """Publish sglang's server args and build its process groups for one CPU process (gloo)."""
    from sglang.srt.distributed.bootstrap import _init_parallel_groups
    from sglang.srt.runtime_context import SpawnRanks, publish
    from sglang.srt.server_args import ServerArgs

    args = ServerArgs(
        model_path=model_path,
        device="cpu",
        tp_size=1,
        load_format="dummy",
        skip_tokenizer_init=True,
        trust_remote_code=True,
    )
    publish(args, role="scheduler", ranks=SpawnRanks(world_rank=0, dp_rank=None, gpu_id=None))
    _init_parallel_groups(
        backend="gloo", dist_init_method=f"tcp://127.0.0.1:{_free_port()}", server_args=args, gpu_id=0
    )
    _Setup.sglang_args = args


def sglang_model(model_path: str, draft: bool) -> _Model:
    """sglang's own `_initialize_model` under `torch.device("meta")`, as its structural-signature path does."""
    import torch
    from sglang.srt.configs.load_config import LoadConfig
    from sglang.srt.configs.model_config import ModelConfig
    from sglang.srt.model_loader.loader import _get_quantization_config, _initialize_model
    from sglang.srt.model_loader.utils import set_default_torch_dtype

    config = ModelConfig.from_server_args(_Setup.sglang_args, is_draft_model=draft)
    load = LoadConfig(load_format="dummy")
    quant = _get_quantization_config(config, load)
    with set_default_torch_dtype(config.dtype), torch.device("meta"):
        model: _Model = _initialize_model(config, load, quant)
    return model


def vllm_setup(model_path: str) -> None:
    """vLLM's engine config for the model on its CPU platform, and its process groups for one process (gloo)."""
    # vLLM's own switches: its CPU platform, and no visible GPU. With no visible device vLLM keeps the
    # installed Triton (its check allows zero active drivers then) instead of demanding triton-cpu,
    # which is not on PyPI; nothing of vLLM is replaced.
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
    os.environ["CUDA_VISIBLE_DEVICES"] = ""
    from vllm.config import set_current_vllm_config
    from vllm.distributed import init_distributed_environment, initialize_model_parallel
    from vllm.engine.arg_utils import EngineArgs

    engine = EngineArgs(
        model=model_path,
        skip_tokenizer_init=True,
        trust_remote_code=True,
        load_format="dummy",
        enforce_eager=True,
    )
    _Setup.vllm_config = engine.create_engine_config()
    with set_current_vllm_config(_Setup.vllm_config):
        init_distributed_environment(
            world_size=1,
            rank=0,
            local_rank=0,
            backend="gloo",
            distributed_init_method=f"tcp://127.0.0.1:{_free_port()}",
        )
        initialize_model_parallel(1, 1)


def vllm_model(model_path: str, draft: bool) -> _Model:
    """vLLM's own model class from its registry, constructed under its config context on the meta device."""
    import torch
    from vllm.config import set_current_vllm_config
    from vllm.model_executor.model_loader.utils import initialize_model
    from vllm.utils.torch_utils import set_default_torch_dtype

    vllm_config = _Setup.vllm_config
    hf_config = vllm_config.model_config.hf_config
    if draft:  # the MTP head's class, registered under its own architecture name
        hf_config.architectures = [_vllm_draft_arch(hf_config.architectures[0])]
    with (
        set_current_vllm_config(vllm_config),
        set_default_torch_dtype(vllm_config.model_config.dtype),
        torch.device("meta"),
    ):
        model: _Model = initialize_model(vllm_config=vllm_config)
    return model


def _vllm_draft_arch(arch: str) -> str:
    return {
        "Glm4MoeForCausalLM": "Glm4MoeMTPModel",
        "DeepseekV3ForCausalLM": "DeepSeekMTPModel",
        "DeepseekV2ForCausalLM": "DeepSeekMTPModel",
    }.get(arch, arch)


def _where(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    return f"{frames[-1].filename}:{frames[-1].lineno}" if frames else ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--framework", choices=("sglang", "vllm"), required=True)
    parser.add_argument("--model-path", required=True, help="Directory holding config.json.")
    parser.add_argument(
        "--with-draft", action="store_true", help="Also build the nextn/MTP draft model class."
    )
    parser.add_argument(
        "--source", help="Framework clone to import the Python code from (the installed package fills gaps)."
    )
    args = parser.parse_args(argv)
    # frameworks log to stdout; keep stdout for the one JSON answer, everything else goes to stderr
    answer = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    path = os.path.abspath(args.model_path)
    out: dict[str, Any] = {"framework": args.framework}
    try:
        from importlib.metadata import version

        out["version"] = version(args.framework)
        if args.source:
            out["imported_from"] = import_from_clone(args.framework, os.path.abspath(args.source))
        (sglang_setup if args.framework == "sglang" else vllm_setup)(path)
        build = sglang_model if args.framework == "sglang" else vllm_model
        model = build(path, False)
    except Exception as exc:  # noqa: BLE001 - any failure is the answer: it names what blocked construction
        traceback.print_exc(file=sys.stderr)
        out.update(source="blocked", error=f"{type(exc).__name__}: {exc}"[:500], where=_where(exc))
        print(json.dumps(out), file=answer)
        return BLOCKED_EXIT
    out.update(
        source="model-class",
        **{"class": type(model).__name__},
        params=_params(model),
        loaders=_loaders(model),
    )
    del model
    if args.with_draft:
        try:
            draft = build(path, True)
            out.update(
                draft_class=type(draft).__name__, draft_params=_params(draft), draft_loaders=_loaders(draft)
            )
        except Exception as exc:  # noqa: BLE001 - the draft class may be blocked where the target is not
            traceback.print_exc(file=sys.stderr)
            out["draft_blocked"] = {"error": f"{type(exc).__name__}: {exc}"[:500], "where": _where(exc)}
    print(json.dumps(out), file=answer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
