#!/usr/bin/env bash
# A throwaway venv with torch and sglang/vLLM from PyPI, for `rocport weights --profile sglang|vllm`
# (tools/weights/meta_model.py builds the model class there on the meta device). No GPU needed.
# The frameworks go in with --no-deps plus the few packages their model modules import; nothing of
# theirs is stubbed. Usage: bash evals/weights_real/setup_venv.sh [VENV]  (default ~/.cache/rocport-evals/venv-fw)
set -euo pipefail
VENV="${1:-$HOME/.cache/rocport-evals/venv-fw}"
python3 -m venv "$VENV"
PIP="$VENV/bin/pip install -q"
# torch as the frameworks pin it (the PyPI build; it runs on a CPU-only machine)
$PIP "torch==2.14.0" "torchvision==0.29.0"
$PIP --no-deps "sglang==0.5.23" "vllm==0.34.0"
$PIP "transformers==5.19.0" "tokenizers==0.23.2" numpy pydantic psutil requests packaging einops msgspec pyzmq \
  orjson safetensors tqdm regex cloudpickle pyyaml typing_extensions setproctitle pybase64 partial_json_parser \
  prometheus-client fastapi python-multipart aiohttp cachetools blake3 gguf triton cbor2 pillow IPython dill \
  sentencepiece "apache-tvm-ffi==0.1.11" compressed_tensors openai uvicorn uvloop py-cpuinfo llguidance xgrammar
echo "ROCPORT_FRAMEWORK_PYTHON=$VENV/bin/python"
