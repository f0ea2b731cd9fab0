"""Domain facts in exception messages: weight names, key lists, shapes, modules.

Each probe takes the exception and the source line that raised it and returns
(kind, symbol, facts) or None. Shapes are reported as [param shape, loaded shape].
"""

from __future__ import annotations

import re
from typing import Any

from tools.diagnose.traceback import PyException

CUDA_ONLY_MODULES = {
    "deep_gemm",
    "deep_ep",
    "flashinfer",
    "flash_attn",
    "flash_attn_2_cuda",
    "flash_mla",
    "flashmla",
    "cutlass",
    "cuda",
    "pynvml",
    "nvidia",
    "xformers",
    "apex",
    "fast_hadamard_transform",
    "causal_conv1d",
    "mamba_ssm",
    "tensorrt_llm",
    "tensorrt",
    "cupy",
    "pycuda",
    "nvtx",
    "cudnn",
    "transformer_engine",
    "quack",
    "cuequivariance",
    "triton_kernels",
    "flashinfer_python",
    "sgl_kernel",
    "vllm_flash_attn",
    "marlin",
    "mooncake",
    "nixl",
    "awq_ext",
    "exllama_ext",
    "exllamav2_ext",
    "autogptq_cuda",
    "quant_cuda",
}
_WEIGHT_NAME = re.compile(r"^[\w]+(?:\.[\w]+)+$")
_KEY_LIST = re.compile(r"(Missing|Unexpected) key\(s\) in state_dict: (?P<keys>(?:\"[^\"]*\"(?:, )?)+)")
_NOT_INITIALIZED = re.compile(
    r"(?:[Ff]ollowing weights were not initialized from checkpoint|"
    r"[Ss]ome weights are not initialized from checkpoints?|not initialized from checkpoint)"
    r"[^{\[]*[{\[](?P<keys>[^}\]]*)[}\]]"
)
_UNEXPECTED_LIST = re.compile(
    r"(?:[Uu]nexpected (?:weights|keys|tensors)|[Uu]nused weights)[^{\[]*[{\[](?P<keys>[^}\]]*)[}\]]"
)
_QUOTED = re.compile(r"'([^']+)'|\"([^\"]+)\"")
_TORCH_SIZE = r"torch\.Size\(\[(?P<{n}>[\d, ]*)\]\)"
_STATE_DICT_MISMATCH = re.compile(
    r"size mismatch for (?P<name>[\w.]+): copying a param with shape "
    + _TORCH_SIZE.format(n="loaded")
    + r" from checkpoint, the shape in current model is "
    + _TORCH_SIZE.format(n="param")
)
_ATTEMPTED = re.compile(
    r"Attempted to load weight \("
    + _TORCH_SIZE.format(n="loaded")
    + r"\) into parameter \("
    + _TORCH_SIZE.format(n="param")
    + r"\)"
)
_PARAM_HAS = re.compile(r"parameter has \((?P<param>[\d, ]*)\),? checkpoint has \((?P<loaded>[\d, ]*)\)")
_VS = re.compile(
    r"shape mismatch(?: for)?[:\s]*(?P<name>[A-Za-z_][\w.]*)?[:\s]*[\[(](?:torch\.Size\(\[)?(?P<param>[\d, ]+)"
    r"[\])]+\)?\s*(?:vs\.?|!=|and)\s*[\[(](?:torch\.Size\(\[)?(?P<loaded>[\d, ]+)[\])]",
    re.IGNORECASE,
)
_ASSERT_SHAPES = re.compile(r"assert\s+\w+(?:\.data)?\.(?:shape|size\(\))\s*==\s*\w+\.(?:shape|size\(\))")
_DTYPE = re.compile(
    r"\b(?:torch\.)?(uint8|int8|float8_e4m3fnuz?|float8_e5m2|float4_e2m1fn_x2|bfloat16|float16|float32)\b"
)
_NO_MODULE = re.compile(r"No module named '(?P<m>[\w.]+)'")
_CANNOT_IMPORT = re.compile(r"cannot import name '(?P<n>\w+)' from '(?P<m>[\w.]+)'")
_NOT_DEFINED = re.compile(r"name '(?P<n>\w+)' is not defined")
_SHARED_OBJECT = re.compile(r"(?P<lib>lib[\w.+-]+\.so[\d.]*): cannot open shared object file")


def _shape(text: str) -> list[int]:
    return [int(x) for x in re.findall(r"\d+", text)]


def _keys(text: str) -> list[str]:
    return [a or b for a, b in _QUOTED.findall(text)]


def weight_facts(exc: PyException, code: str) -> tuple[str, str | None, dict[str, Any]] | None:
    """weight_name: a KeyError on a tensor name, or missing/unexpected key lists."""
    msg = exc.message
    if exc.type.endswith("KeyError"):
        name = msg.strip().strip("'\"")
        if _WEIGHT_NAME.match(name) or re.search(r"params_dict|state_dict|weights?\[", code):
            # the checkpoint offered a name no registered parameter has: a name not consumed
            return "weight_name", name, {"unexpected": [name]} if "params_dict" in code else {}
        return None
    facts: dict[str, Any] = {}
    for km in _KEY_LIST.finditer(msg):
        facts["missing" if km.group(1) == "Missing" else "unexpected"] = _keys(km.group("keys"))[:500]
    m = _NOT_INITIALIZED.search(msg)
    if m:
        facts["missing"] = sorted(_keys(m.group("keys")))[:500]
    m = _UNEXPECTED_LIST.search(msg)
    if m:
        facts["unexpected"] = sorted(_keys(m.group("keys")))[:500]
    if not facts or (all_size_mismatches(msg) and not facts.get("missing")):
        return None
    names = facts.get("missing") or facts.get("unexpected") or [None]
    return "weight_name", names[0], facts


_NOT_IN_PARAMS = re.compile(r"Parameter (?P<name>[\w.]+) not found in params_dict")


def weight_line(text: str) -> tuple[str | None, dict[str, Any]] | None:
    """Weight-name facts logged as a plain line (vLLM's warning list, sglang's per-parameter notice)."""
    m = _NOT_IN_PARAMS.search(text)
    if m:
        return m.group("name"), {"unexpected": [m.group("name")]}
    if "initialized from checkpoint" not in text and "key(s) in state_dict" not in text:
        return None
    found = weight_facts(PyException("log", text), "")
    return (found[1], found[2]) if found else None


def all_size_mismatches(message: str) -> list[tuple[str | None, list[int], list[int]]]:
    """Every (name, param shape, loaded shape) a message reports, in order."""
    found = [
        (m.group("name"), _shape(m.group("param")), _shape(m.group("loaded")))
        for m in _STATE_DICT_MISMATCH.finditer(message)
    ]
    found += [
        (m.groupdict().get("name"), _shape(m.group("param")), _shape(m.group("loaded")))
        for pattern in (_ATTEMPTED, _PARAM_HAS, _VS)
        for m in pattern.finditer(message)
    ]
    return found


def shape_facts(exc: PyException, code: str) -> tuple[str, str | None, dict[str, Any]] | None:
    """quant_exclusion: a weight whose shape differs from its parameter (e.g. half K under MXFP4)."""
    mismatches = all_size_mismatches(exc.message)
    if not mismatches and not (exc.type.endswith("AssertionError") and _ASSERT_SHAPES.search(code)):
        return None
    facts: dict[str, Any] = {}
    name = None
    if mismatches:
        name, param, loaded = mismatches[0]
        facts["shapes"] = [param, loaded]
    dtype = _DTYPE.search(exc.message)
    if dtype:
        facts["dtype"] = dtype.group(1)
    return "quant_exclusion", name, facts


def import_facts(exc: PyException, code: str) -> tuple[str, str | None, dict[str, Any]] | None:
    """cuda_only_dep: an import of a CUDA-only package fails (missing, or asserting at import time)."""
    msg = exc.message
    m = _NO_MODULE.search(msg) or _CANNOT_IMPORT.search(msg)
    if m:
        module = m.group("m")
        facts = {"module": module}
        if m.groupdict().get("n"):
            facts["name"] = m.group("n")
        cuda_only = cuda_only_prefix(module.split("."))
        return (
            ("cuda_only_dep", cuda_only, facts)
            if cuda_only
            else ("python_error", module.split(".")[0], facts)
        )
    m = _NOT_DEFINED.search(msg) if exc.type.endswith("NameError") else None
    if m and m.group("n") in CUDA_ONLY_MODULES:  # `awq_ext is None`-style guards after a failed import
        return "cuda_only_dep", m.group("n"), {"module": m.group("n")}
    lib = _SHARED_OBJECT.search(msg)
    if lib and re.search(r"cud|nv|cublas|nccl", lib.group("lib")):
        top = _importing_cuda_package(exc)
        return "cuda_only_dep", top or lib.group("lib"), {"library": lib.group("lib")}
    top = _importing_cuda_package(exc)
    if top and "undefined symbol" not in msg:
        return "cuda_only_dep", top, {"module": top}
    return None


def cuda_only_prefix(parts: list[str]) -> str | None:
    """`vllm.vllm_flash_attn` for ['vllm', 'vllm_flash_attn', 'layers']: the module path up to its CUDA-only part."""
    for i, part in enumerate(parts):
        if part in CUDA_ONLY_MODULES:
            return ".".join(parts[: i + 1])
    return None


def _importing_cuda_package(exc: PyException) -> str | None:
    """A CUDA-only package (or subpackage) on the stack while a module was being imported."""
    if not any(f.func == "<module>" for f in exc.frames[1:]):
        return None
    for frame in reversed(exc.frames):
        m = re.search(r"(?:site|dist)-packages/([\w/]+)/", frame.path.replace("\\", "/"))
        found = cuda_only_prefix(m.group(1).split("/")) if m else None
        if found:
            return found
    return None
